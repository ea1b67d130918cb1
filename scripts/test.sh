#!/usr/bin/env bash
# make test: every test of the module, in five shared lanes side by side,
# then the quiet lane.
#
# Most tests run real PostgreSQL servers and pgbench, but few judge the
# figures they measure: the others check what a campaign, a build or an
# apply does, and a run of a fixed duration takes as long on a loaded
# machine as on an idle one. Those run in the shared lanes, side by side,
# each lane one package at a time:
#
#   builds    internal/pgbuild (PostgreSQL compiled for real once, then
#             from its ccache), the runner's bisect test, the provider's
#             build tests (from that ccache; its bisect test reuses the
#             runner's builds)
#   packages  the packages that neither measure nor build
#   hosts     the provider's host tests (on the EC2 stand-in, over SSH, on
#             this machine), which mostly wait on Terraform and the hosts,
#             then the small packages that start a server
#   campaigns the campaign engine, the runner's other tests, the
#             provider's examples
#   provider  the provider's campaign, pool and connection tests
#
# The compiles are the longest chain of work and the only one that does
# not wait on a clock, so they come first: each lane is a session of its
# own, which the kernel's autogroup scheduler gives an equal share of the
# CPUs (every PostgreSQL server too: pg_ctl starts one in a session of its
# own), and the builds lane's session, run as root, asks for a share that
# many times larger (autogroup nice BUILDS_NICE).
#
# Each shared lane has a host lock directory of its own (PGBENCH_RUNNER_LOCK_DIR),
# so that its campaigns' measured phases do not wait on the other lanes'
# (a host lock keeps measurements apart on one host; the lanes do not need
# that), and PGBENCH_TEST_LANE=shared.
#
# The tests that need the machine to itself are listed in QUIET_TESTS: the
# shared lanes skip them, and they run last, alone, one at a time. They are
# the tests whose assertions judge measured figures (a verdict that needs
# the machine's noise low), which call testhost.Quiet, and those that change
# kernel state, which take testhost.LockKernel. Either helper fails a test
# in a shared lane that is missing from QUIET_TESTS, saying so, and
# testhost's TestQuietListsTheQuietTests compares the list with the tests.
#
# Each lane's output waits in a file and is printed when the lane ends, so
# that the outputs do not interleave.
#
# Environment: GO_TEST_FLAGS (flags for every go test, such as -v; not -run
# or -skip, which the lanes set), and the variables the tests read (TF_ACC,
# TF_ACC_TERRAFORM_PATH, PGBENCH_REQUIRE_REAL_HOSTS...).
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."

mod=$(go list -m)
# -vet=off: make test has run go vet over every package first, with every
# check go test's vet would run.
flags=(-trimpath -count=1 -timeout 60m -vet=off ${GO_TEST_FLAGS:-})

# The tests that need the machine to itself: those that judge measured
# figures (testhost.Quiet), then those that change kernel state
# (testhost.LockKernel: a server of a test beside them would take huge pages
# from their pools).
QUIET_TESTS=(
	TestDefaultsFindAModestSlowdown TestAAIsNoDifference
	TestRealEffectAndRemoveData TestAdaptiveCampaign
	TestClientBoundIsFlagged TestCountersAndProfilesExplainASeqScan
	TestSampledRuns TestTPCCCampaign
	TestAccABBenchmarkPipeline TestAccEC2ExampleInstanceMatrix
	TestAccEC2ExampleNumaClockSweep TestAccEC2HostLifecycle
	TestAccEC2StockImageLogin TestAccHostLocal
	TestAccHostTuningFailureLeavesHostUnchanged TestAccHugepagePoolDrift
	TestAccHugepagePoolImpossible TestAccHugepagePoolMemoryFraction
	TestAccHugepagePoolPagesSSH TestAccHugepagePoolSizeForPostgres
	TestApplyRevertReal TestHugePagesOnWithoutPool
	TestHugepagesReserveImpossibleCLI TestHugepagesReserveReleaseCLI
	TestPagetablesShape TestPlanForPostgresStarts
	TestPlannedPoolStartsPostgres TestReserveImpossible TestReserveNode
	TestReserveRelease TestTuneApplyRevertCLI
)
QUIET="^($(IFS='|'; echo "${QUIET_TESTS[*]}"))\$"

# The packages that neither measure nor build PostgreSQL.
PACKAGES=(
	internal/atomicfile internal/bisect internal/changepoint internal/digest
	internal/ec2host internal/ec2quota internal/ec2sim internal/filelock
	internal/hostlock internal/journal internal/pkgmgr internal/proc
	internal/release internal/remote internal/report internal/resultsdb
	internal/resultsdb/resultsdbtest internal/runnerbin internal/runnerclient
	internal/statefile internal/sysinfo internal/testhost scripts/release .
)
# The packages with a place of their own in a lane; every other package
# is a small one that starts a server, in the hosts lane (servers).
BUILDS=internal/pgbuild
RUNNER=runner
CAMPAIGN=internal/campaign
# The provider's tests: host tests (hosts on the EC2 stand-in, over SSH or
# on this machine, without a campaign), but for the examples and one that
# runs a campaign; and the tests that build PostgreSQL.
PROVIDER_HOSTS='^TestAcc(EC2|Host)'
PROVIDER_EXAMPLES='^TestAcc(EC2Example|HostDestroyRemovesAbandonedCampaign)'
PROVIDER_BUILDS='^TestAcc(PostgresBuild|PerfBisect)'
# The runner's bisect test runs in the builds lane before the provider's:
# they bisect the same commits, and the provider's then reuses every build
# (built after it, a build cut short by the provider test's create timeout
# starts its tree over).
RUNNER_BISECT='^TestBisectFindsTheSlowCommit$'
# The autogroup nice of the builds lane's session: -10 weighs about 9
# times a session at 0.
BUILDS_NICE=-10

pkg() { if [ "$1" = . ]; then echo "$mod"; else echo "$mod/$1"; fi; }
pkgs() { local q; for q; do pkg "$q"; done; }

# gotest runs go test in a shared lane, without the quiet tests.
gotest() {
	local skip=$QUIET
	local args=()
	while [ $# -gt 0 ]; do
		case $1 in
		-skip) skip="$2|$QUIET"; shift 2 ;;
		*) args+=("$1"); shift ;;
		esac
	done
	go test "${flags[@]}" -p 1 -skip "$skip" "${args[@]}"
}

# servers lists the packages no lane names: small ones that start a server.
servers() {
	local p placed
	placed=" $(pkgs "${PACKAGES[@]}" $BUILDS $RUNNER $CAMPAIGN provider | tr '\n' ' ') "
	for p in $(go list ./...); do
		case $placed in
		*" $p "*) ;;
		*) echo "$p" ;;
		esac
	done
}

# The lanes.
lane_builds() {
	local s=0
	if [ "$(id -u)" -eq 0 ]; then echo "$BUILDS_NICE" >/proc/self/autogroup || true; fi
	gotest "$(pkg $BUILDS)" || s=1
	gotest "$(pkg $RUNNER)" -run "$RUNNER_BISECT" || s=1
	gotest "$mod/provider" -run "$PROVIDER_BUILDS" || s=1
	return $s
}
lane_packages() {
	gotest $(pkgs "${PACKAGES[@]}")
}
lane_hosts() {
	local s=0
	gotest "$mod/provider" -run "$PROVIDER_HOSTS" -skip "$PROVIDER_EXAMPLES" || s=1
	gotest $(servers) || s=1
	return $s
}
lane_campaigns() {
	local s=0
	gotest "$(pkg $CAMPAIGN)" || s=1
	gotest "$(pkg $RUNNER)" -skip "$RUNNER_BISECT" || s=1
	gotest "$mod/provider" -run "$PROVIDER_EXAMPLES" || s=1
	return $s
}
lane_provider() {
	gotest "$mod/provider" -skip "$PROVIDER_HOSTS|$PROVIDER_BUILDS"
}

if [ "${1:-}" = --lane ]; then
	"lane_$2"
	exit
fi

go list ./... >/dev/null || exit 1
start=$(date +%s)
say() { printf '\n==> %s (%ss into make test)\n' "$*" "$(( $(date +%s) - start ))"; }

tmp=$(mktemp -d)
running=()
stop_lanes() { for p in "${running[@]}"; do kill -- "-$p" 2>/dev/null; done; }
trap 'rm -rf "$tmp"' EXIT
trap 'stop_lanes; exit 130' INT
trap 'stop_lanes; exit 143' TERM

# Every lane is a session of its own (setsid): the scheduler's share, and
# a process group that an interrupted make test ends.
declare -A lane_of
say "the shared lanes: builds, packages, hosts, campaigns, provider"
for name in builds packages hosts campaigns provider; do
	mkdir -p "$tmp/lock-$name"
	PGBENCH_TEST_LANE=shared PGBENCH_RUNNER_LOCK_DIR="$tmp/lock-$name" \
		setsid bash "$self" --lane "$name" >"$tmp/$name.log" 2>&1 &
	running+=($!)
	lane_of[$!]=$name
done
status=0
while [ "${#running[@]}" -gt 0 ]; do
	wait -n -p done "${running[@]}"
	rc=$?
	left=()
	for p in "${running[@]}"; do [ "$p" = "$done" ] || left+=("$p"); done
	running=("${left[@]}")
	say "the ${lane_of[$done]} lane's tests (exit $rc)"
	cat "$tmp/${lane_of[$done]}.log"
	[ "$rc" -eq 0 ] || status=1
done

# The quiet lane: the packages that hold a test in QUIET_TESTS (as far as
# a helper that takes the kernel lock lives in the test's own package).
quiet=()
for d in $(grep -rlE --include='*_test.go' 'testhost\.(Quiet|LockKernel)\(' . | xargs -n1 dirname | sort -u); do
	quiet+=("$(pkg "${d#./}")")
done
say "the quiet lane: the tests that need the machine to itself, one at a time"
go test "${flags[@]}" -p 1 -run "$QUIET" "${quiet[@]}" || status=1
say "done, status $status"
exit "$status"
