#!/usr/bin/env bash
# make test: every test of the module, in two lanes.
#
# Most tests measure (real pgbench runs, whose figures the tests judge) or
# load both cores with PostgreSQL, and must not share the machine: those
# packages run one at a time (-p 1), after the first lane.
#
# The first lane runs two things side by side. internal/pgbuild compiles
# PostgreSQL on both cores and measures nothing; beside it run the
# packages that neither measure nor build PostgreSQL (BESIDE: report's statistics are tested by
# simulation, on numbers they draw themselves) and the provider's host tests
# (hosts on the EC2 stand-in, over SSH or on this machine, without a
# campaign: PROVIDER_BESIDE, but for PROVIDER_MEASURING), which mostly wait
# on SSH, on process exits and on the EC2 stand-in's clock. A test added to
# one of those must not run a campaign or a build: put it in the measuring
# lane instead.
#
# Environment: GO_TEST_FLAGS (flags for every go test, such as -v; not -run,
# which the lanes set), and the variables the
# tests read (TF_ACC, TF_ACC_TERRAFORM_PATH, PGBENCH_REQUIRE_REAL_HOSTS...).
set -uo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
flags=(-trimpath -count=1 -timeout 60m ${GO_TEST_FLAGS:-})

BESIDE=(
	internal/atomicfile internal/bisect internal/changepoint internal/digest
	internal/ec2host internal/ec2quota internal/ec2sim internal/filelock
	internal/hostlock internal/journal internal/pkgmgr internal/proc
	internal/release internal/remote internal/report internal/resultsdb
	internal/resultsdb/resultsdbtest internal/runnerbin internal/runnerclient
	internal/statefile internal/sysinfo internal/testhost scripts/release .
)
PROVIDER_BESIDE='^TestAcc(EC2|Host)'
PROVIDER_MEASURING='^TestAcc(EC2Example|HostDestroyRemovesAbandonedCampaign)'
BUILDS=internal/pgbuild

beside=()
for p in "${BESIDE[@]}"; do
	if [ "$p" = . ]; then beside+=("$mod"); else beside+=("$mod/$p"); fi
done
all=$(go list ./...) || exit 1
measuring=()
for p in $all; do
	case " ${beside[*]} $mod/$BUILDS $mod/provider " in
	*" $p "*) ;;
	*) measuring+=("$p") ;;
	esac
done

start=$(date +%s)
lane() { printf '\n==> %s (%ss into make test)\n' "$*" "$(( $(date +%s) - start ))"; }

# The first lane. The build tests' output waits in a file, so that the two
# outputs do not interleave.
# The builds run in a process group of their own, which an interrupted
# make test ends too. They are not niced: at nice 10 the first lane took
# 659 s instead of 567 s, the compile waiting on the tests beside it.
builds_log=$(mktemp)
builds_pid=
stop_builds() { [ -n "$builds_pid" ] && kill -- "-$builds_pid" 2>/dev/null; }
trap 'rm -f "$builds_log"' EXIT
trap 'stop_builds; exit 130' INT
trap 'stop_builds; exit 143' TERM
lane "builds ($BUILDS) beside the packages that neither measure nor build PostgreSQL"
setsid go test "${flags[@]}" -p 1 "$mod/$BUILDS" >"$builds_log" 2>&1 &
builds_pid=$!
status=0
go test "${flags[@]}" -p 1 "${beside[@]}" || status=1
go test "${flags[@]}" -p 1 "$mod/provider" -run "$PROVIDER_BESIDE" -skip "$PROVIDER_MEASURING" || status=1
wait "$builds_pid" || status=1
builds_pid=
lane "the builds' tests"
cat "$builds_log"

# The second lane: one package at a time.
lane "the measuring packages, one at a time"
go test "${flags[@]}" -p 1 "${measuring[@]}" || status=1
go test "${flags[@]}" -p 1 "$mod/provider" -skip "$PROVIDER_BESIDE" || status=1
go test "${flags[@]}" -p 1 "$mod/provider" -run "$PROVIDER_MEASURING" || status=1
lane "done, status $status"
exit "$status"
