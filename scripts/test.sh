#!/usr/bin/env bash
# make test: every test of the module, in five shared lanes and a kernel
# lane side by side, then the quiet lane.
#
# Most tests run real PostgreSQL servers and pgbench, but few judge the
# figures they measure: the others check what a campaign, a build or an
# apply does, and a run of a fixed duration takes as long on a loaded
# machine as on an idle one. Those run in the shared lanes, side by side,
# each lane one package at a time:
#
#   builds    internal/pgbuild (every phase of a build from the tarball,
#             the compiler's work from the shared ccache), the provider's
#             build tests, the small packages that start a server
#   packages  the packages that neither measure nor build
#   hosts     the provider's host tests (on the EC2 stand-in, over SSH, on
#             this machine), which mostly wait on Terraform and the hosts
#   campaigns the campaign engine, the runner, the provider's examples
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
# The tests that change kernel state (testhost.LockKernel), listed in
# KERNEL_TESTS, run in a lane of their own beside the shared lanes, one at a
# time: a server of a shared lane that asks for huge_pages = try would take
# pages from their pools, so the shared lanes run in a cgroup of the
# kernel's hugetlb controller that may reserve none (such a server starts
# without them). Where that controller cannot be had (not root, or no
# hugetlb controller), they run after the shared lanes, alone.
#
# The tests that judge measured figures (testhost.Quiet, a verdict that
# needs the machine's noise low), listed in QUIET_TESTS, run last, alone,
# one at a time: the quiet lane.
#
# The lanes beside others skip the tests of both lists, and the helpers fail
# a test in a lane it must not run in, naming the list it is missing from;
# testhost's TestQuietListsTheQuietTests compares the lists with the tests.
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
flags=(-trimpath -count=1 -timeout 60m ${GO_TEST_FLAGS:-})

# The tests that judge measured figures (testhost.Quiet): the quiet lane.
QUIET_TESTS=(
	TestDefaultsFindAModestSlowdown TestAAIsNoDifference
	TestRealEffectAndRemoveData TestAdaptiveCampaign
	TestClientBoundIsFlagged TestCountersAndProfilesExplainASeqScan
	TestSampledRuns TestTPCCCampaign TestBisectFindsTheSlowCommit
)
# The tests that change kernel state (testhost.LockKernel): the kernel lane.
KERNEL_TESTS=(
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
anchored() { echo "^($(IFS='|'; echo "$*"))\$"; }
QUIET=$(anchored "${QUIET_TESTS[@]}")
KERNEL=$(anchored "${KERNEL_TESTS[@]}")
APART=$(anchored "${QUIET_TESTS[@]}" "${KERNEL_TESTS[@]}")

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
# is a small one that starts a server, in the builds lane (servers).
BUILDS=internal/pgbuild
RUNNER=runner
CAMPAIGN=internal/campaign
# The provider's tests: host tests (hosts on the EC2 stand-in, over SSH or
# on this machine, without a campaign), but for the examples and one that
# runs a campaign; and the tests that build PostgreSQL.
PROVIDER_HOSTS='^TestAcc(EC2|Host)'
PROVIDER_EXAMPLES='^TestAcc(EC2Example|HostDestroyRemovesAbandonedCampaign)'
PROVIDER_BUILDS='^TestAcc(PostgresBuild|PerfBisect)'
# The autogroup nice of the builds lane's session: -10 weighs about 9
# times a session at 0.
BUILDS_NICE=-10

pkg() { if [ "$1" = . ]; then echo "$mod"; else echo "$mod/$1"; fi; }

# gotest runs go test in a shared lane, without the tests of the kernel
# and quiet lanes.
gotest() {
	local skip=$APART
	local args=()
	while [ $# -gt 0 ]; do
		case $1 in
		-skip) skip="$2|$APART"; shift 2 ;;
		*) args+=("$1"); shift ;;
		esac
	done
	go test "${flags[@]}" -p 1 -skip "$skip" "${args[@]}"
}

# servers lists the packages no lane names: small ones that start a server.
servers() {
	local p q placed
	placed=" $(for q in "${PACKAGES[@]}" $BUILDS $RUNNER $CAMPAIGN provider; do pkg "$q"; done | tr '\n' ' ') "
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
	gotest "$mod/provider" -run "$PROVIDER_BUILDS" || s=1
	gotest $(servers) || s=1
	return $s
}
lane_packages() {
	gotest $(for q in "${PACKAGES[@]}"; do pkg "$q"; done)
}
lane_hosts() {
	gotest "$mod/provider" -run "$PROVIDER_HOSTS" -skip "$PROVIDER_EXAMPLES"
}
lane_campaigns() {
	local s=0
	gotest "$(pkg $CAMPAIGN)" || s=1
	gotest "$(pkg $RUNNER)" || s=1
	gotest "$mod/provider" -run "$PROVIDER_EXAMPLES" || s=1
	return $s
}
lane_provider() {
	gotest "$mod/provider" -skip "$PROVIDER_HOSTS|$PROVIDER_BUILDS"
}
lane_kernel() {
	go test "${flags[@]}" -p 1 -run "$KERNEL" $(calling LockKernel)
}

# calling lists the packages whose tests call the testhost function $1 (as
# far as a helper that calls it lives in the test's own package).
calling() {
	local d
	for d in $(grep -rlE --include='*_test.go' "testhost\.$1\(" . | xargs -n1 dirname | sort -u); do
		pkg "${d#./}"
	done
}

# no_huge_pages_cgroup makes a cgroup of the kernel's hugetlb controller
# (cgroup v1, mounted here if no hierarchy has it) in which a process may
# neither reserve nor fault in a huge page, and prints its directory. With
# the reservation's limit at 0 a server's mmap of huge pages fails at once,
# and huge_pages = try starts it without them; it fails where it cannot be
# had (not root, no controller, a kernel without reservation limits).
no_huge_pages_cgroup() {
	local root=/sys/fs/cgroup/hugetlb dir f limits=0
	[ "$(id -u)" -eq 0 ] || return 1
	if [ ! -e "$root/cgroup.procs" ]; then
		awk '$1 == "hugetlb" && $2 == 0 && $4 == 1 { ok = 1 } END { exit !ok }' /proc/cgroups || return 1
		mkdir -p "$root" && mount -t cgroup -o hugetlb pgbench-test-hugetlb "$root" 2>/dev/null || return 1
	fi
	dir=$root/pgbench-test-shared
	mkdir -p "$dir" || return 1
	for f in "$dir"/hugetlb.*.rsvd.limit_in_bytes; do
		[ -e "$f" ] || return 1
		echo 0 >"$f" && echo 0 >"${f/.rsvd.limit/.limit}" || return 1
		limits=$((limits + 1))
	done
	[ "$limits" -gt 0 ] && echo "$dir"
}

if [ "${1:-}" = --lane ]; then
	if [ -n "${NO_HUGE_PAGES_CGROUP:-}" ]; then
		echo $$ >"$NO_HUGE_PAGES_CGROUP/cgroup.procs" || exit 1
	fi
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

# The kernel lane runs beside the shared lanes when they can be kept from
# huge pages; otherwise its tests run after them, alone.
cgroup=$(no_huge_pages_cgroup) || cgroup=
lanes=(builds packages hosts campaigns provider)
if [ -n "$cgroup" ]; then
	lanes+=(kernel)
	say "the shared lanes (builds, packages, hosts, campaigns, provider) in $cgroup, without huge pages, and the kernel lane"
else
	say "the shared lanes: builds, packages, hosts, campaigns, provider (no hugetlb cgroup here: the kernel lane runs after them)"
fi

# Every lane is a session of its own (setsid): the scheduler's share, and
# a process group that an interrupted make test ends.
declare -A lane_of
for name in "${lanes[@]}"; do
	mkdir -p "$tmp/lock-$name"
	if [ "$name" = kernel ]; then lane=kernel nohuge=; else lane=shared nohuge=$cgroup; fi
	PGBENCH_TEST_LANE=$lane NO_HUGE_PAGES_CGROUP=$nohuge PGBENCH_RUNNER_LOCK_DIR="$tmp/lock-$name" \
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

if [ -z "$cgroup" ]; then
	say "the kernel lane: the tests that change kernel state, alone, one at a time"
	lane_kernel || status=1
fi
say "the quiet lane: the tests that judge measured figures, alone, one at a time"
go test "${flags[@]}" -p 1 -run "$QUIET" $(calling Quiet) || status=1
say "done, status $status"
exit "$status"
