// Package testhost gives tests real hosts: network namespaces running a real
// sshd, and the guards that tests touching the machine need (root, tools, a
// machine-wide lock for kernel tuning).
package testhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// RequireEnv is the variable that turns every "cannot run here" skip into a
// failure. .ci/run sets it, so CI never passes by skipping real tests.
const RequireEnv = "PGBENCH_REQUIRE_REAL_HOSTS"

// Required reports whether skips of real-host tests are forbidden.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Skip skips the test with a loud reason, or fails it when RequireEnv is set.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("REQUIRED TEST CANNOT RUN (%s=1): %s", RequireEnv, msg)
	}
	t.Skipf("SKIPPED, NOT TESTED: %s (set %s=1 to make this a failure)", msg, RequireEnv)
}

// SkipShort skips the test under go test -short (make test-short), the
// inner loop that leaves out what needs real hosts, PostgreSQL servers,
// builds from source or the kernel, naming what the test needs. Only
// -short skips this way: make test, which CI runs, runs every test, and
// RequireEnv has no say over it.
func SkipShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIPPED IN -short: needs %s (make test runs it)", needs)
	}
}

// RequireRoot skips (or fails, see Skip) unless the test runs as root. The
// tests that need root use real hosts, sysctls or huge pages: they skip
// under -short (SkipShort).
func RequireRoot(t testing.TB) {
	t.Helper()
	SkipShort(t, "root (real hosts, sysctls, huge pages)")
	if os.Geteuid() != 0 {
		Skip(t, "needs root (network namespaces, sysctls, huge pages)")
	}
}

// RequireCommand returns the absolute path of a program, looked up in PATH
// and then in the given extra directories; it skips (or fails) when the
// program is not installed.
func RequireCommand(t testing.TB, name string, extraDirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range extraDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	Skip(t, "needs %s, which is not installed (see .ci/run for the packages)", name)
	return ""
}

// KernelLockPath is the file whose flock serializes every test, in any
// package, that changes machine-wide kernel state (sysctls, huge pages,
// tuning knobs). go test runs packages in parallel processes, so an
// in-process mutex is not enough.
const KernelLockPath = "/run/pgbench-test-kernel.lock"

// LockKernel takes the machine-wide kernel lock for the rest of the test and
// releases it in t.Cleanup. Tests that take it must not call t.Parallel.
// Under -short it skips before it waits: every test that changes the kernel skips
// there anyway, and waiting for the lock first would stall the inner loop
// for as long as a full run elsewhere on the machine holds it.
//
// A test that changes kernel state needs the machine to itself in make
// test, as a Quiet test does: a server that a test beside it starts takes
// huge pages from any pool it finds (huge_pages = try), and the pool can
// then not be given back. In a shared lane LockKernel fails the test, as
// Quiet does (notInSharedLane).
func LockKernel(t testing.TB) {
	t.Helper()
	notInSharedLane(t, "changes kernel state (testhost.LockKernel)")
	SkipShort(t, "the machine-wide kernel lock (changes kernel state)")
	f, err := os.OpenFile(KernelLockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		Skip(t, "cannot open kernel lock %s: %v", KernelLockPath, err)
		return
	}
	lock, err := filelock.Wait(f, filelock.Exclusive)
	if err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", KernelLockPath, err)
	}
	t.Cleanup(func() { lock.Close() })
}

// SaveSysctl reads the current value of a /proc/sys file (name given as
// "vm/nr_hugepages" or "vm.nr_hugepages") and restores it in t.Cleanup.
// Call LockKernel first.
func SaveSysctl(t testing.TB, name string) string {
	t.Helper()
	p := SysctlPath(name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("save sysctl %s: %v", name, err)
	}
	prev := string(b)
	t.Cleanup(func() {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Errorf("restore sysctl %s to %q: %v", name, prev, err)
		}
	})
	return prev
}

// SysctlPath maps "vm.nr_hugepages" or "vm/nr_hugepages" to its /proc/sys path.
func SysctlPath(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '.' {
			b[i] = '/'
		}
	}
	return filepath.Join("/proc/sys", string(b))
}

// LaneEnv names the lane of make test a test process runs in
// (scripts/test.sh): "shared" for the lanes that run side by side, where
// other tests load the machine; unset everywhere else.
const LaneEnv = "PGBENCH_TEST_LANE"

// Quiet marks a test whose assertions judge measured figures (a verdict
// that needs the machine's noise low, a share of CPU time): it needs the
// machine to itself, as a test that takes LockKernel does. make test runs
// such tests after its shared lanes, one at a time, when scripts/test.sh
// lists them in QUIET_TESTS; in a shared lane Quiet fails the test
// (notInSharedLane) instead of letting it pass or fail by the load beside
// it.
func Quiet(t testing.TB) {
	t.Helper()
	notInSharedLane(t, "judges measured figures")
}

// notInSharedLane fails a test that needs the machine to itself (what it
// does says why) when it runs in a shared lane of make test, naming the
// list that keeps it out of them.
func notInSharedLane(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(LaneEnv) == "shared" {
		t.Fatalf("this test %s and needs the machine to itself: add it to QUIET_TESTS in scripts/test.sh, which runs it after the shared lanes", what)
	}
}
