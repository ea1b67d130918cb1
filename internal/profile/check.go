// Package profile records where a PostgreSQL server spends its CPU time:
// perf record of the postmaster and every backend it forks, converted from
// `perf script` into pprof profiles (what `go tool pprof` reads), the top
// functions of a profile, and a differential flame graph of two profiles.
package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
)

// Unwinding: how perf walks the stack of each sample.
const (
	UnwindFP    = "fp"    // frame pointers: --call-graph fp
	UnwindDWARF = "dwarf" // --call-graph dwarf (binaries without frame pointers, e.g. Debian's)
)

// DefaultPerf is where distributions install perf when PATH does not have it
// (sudo and cron often run with a PATH without /usr/bin/perf's directory).
const DefaultPerf = "/usr/bin/perf"

// installFix is what to install when perf is missing or cannot run. Debian's
// /usr/bin/perf is a wrapper that runs perf_X.Y for the running kernel, so the
// package must match the kernel (or be any linux-perf the wrapper accepts).
const installFix = "install linux-perf (Debian/Ubuntu: apt-get install linux-perf or linux-tools-$(uname -r)) or perf (dnf)"

// paranoidFix is the sysctl that lets an unprivileged user record other
// users' processes (-p of the postmaster, which runs as postgres).
const paranoidFix = "sysctl kernel.perf_event_paranoid=1 (or run as root, or grant CAP_PERFMON)"

// UnavailableError says perf cannot record on this host: What is missing and
// Fix is exactly what to install or set.
type UnavailableError struct{ What, Fix string }

func (e *UnavailableError) Error() string {
	return "perf cannot record here: " + e.What + "; fix: " + e.Fix
}

// Check says whether perf can record here: the perf binary (PATH or
// DefaultPerf), kernel.perf_event_paranoid (at most 1 unless the caller has
// CAP_PERFMON or CAP_SYS_ADMIN, as root does) and a real trial
// `perf record -e cpu-clock` of `true`. Recording with -a would need the
// sysctl at 0 or -1; Start never uses -a, because perf's inheritance follows
// the backends forked after it attached (see Options.Pids). A host where
// perf cannot record returns an *UnavailableError.
func Check(ctx context.Context) error { return CheckPerf(ctx, "") }

// CheckPerf is Check with the perf binary given; "" looks it up as Check does.
func CheckPerf(ctx context.Context, perf string) error {
	perf, err := findPerf(perf)
	if err != nil {
		return err
	}
	// Debian's wrapper exits non-zero ("perf not found for kernel 6.18")
	// when no perf_X.Y it accepts is installed.
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, perf, "version")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s version: %w", perf, ctx.Err())
		}
		return &UnavailableError{
			What: fmt.Sprintf("%s version failed (%v): %s", perf, err, tail(out.String(), 300)),
			Fix:  installFix + " matching the running kernel " + kernelRelease(),
		}
	}
	if !privileged() {
		p, err := paranoid()
		if err != nil {
			return &UnavailableError{What: fmt.Sprintf("read kernel.perf_event_paranoid: %v", err), Fix: "mount /proc and use a kernel built with CONFIG_PERF_EVENTS"}
		}
		if p > 1 {
			return &UnavailableError{
				What: fmt.Sprintf("kernel.perf_event_paranoid is %d and this user has neither CAP_PERFMON nor CAP_SYS_ADMIN, so perf cannot record the postmaster's processes", p),
				Fix:  paranoidFix,
			}
		}
	}
	return trial(ctx, perf)
}

// trial records `true` for real: events the kernel lacks, a seccomp filter
// or a container without perf_event_open show up only here.
func trial(ctx context.Context, perf string) error {
	dir, err := os.MkdirTemp("", "pgbench-perf-check-")
	if err != nil {
		return fmt.Errorf("perf trial: %w", err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "perf.data")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, perf, "record", "-e", "cpu-clock", "-F", "999", "--no-buildid-cache", "-o", data, "--", "true")
	cmd.Stdout, cmd.Stderr = &out, &out
	proc.Start(cmd, nil)
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("perf trial record: %w", ctx.Err())
	}
	if runErr == nil {
		if fi, err := os.Stat(data); err == nil && fi.Size() > 0 {
			return nil
		}
	}
	what := fmt.Sprintf("trial `perf record -e cpu-clock -- true` failed (%v): %s", runErr, tail(out.String(), 400))
	if strings.Contains(out.String(), "perf_event_paranoid") {
		return &UnavailableError{What: what, Fix: paranoidFix}
	}
	return &UnavailableError{What: what, Fix: "use a kernel with CONFIG_PERF_EVENTS and, in a container, allow perf_event_open (seccomp profile, --cap-add PERFMON)"}
}

// findPerf returns perf, or the perf in PATH, or DefaultPerf.
func findPerf(perf string) (string, error) {
	if perf == "" {
		if p, err := exec.LookPath("perf"); err == nil {
			return p, nil
		}
		perf = DefaultPerf
	}
	fi, err := os.Stat(perf)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		what := fmt.Sprintf("perf is not installed (not in PATH, no executable %s)", perf)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			what = fmt.Sprintf("perf at %s cannot be used: %v", perf, err)
		}
		return "", &UnavailableError{What: what, Fix: installFix}
	}
	return perf, nil
}

// privileged says whether the process has CAP_PERFMON (38) or CAP_SYS_ADMIN
// (21) in its effective set, which perf_event_paranoid does not restrict.
func privileged() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return os.Geteuid() == 0
			}
			return caps&(1<<38|1<<21) != 0
		}
	}
	return os.Geteuid() == 0
}

// paranoid reads kernel.perf_event_paranoid.
func paranoid() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "(unknown)"
	}
	return strings.TrimSpace(string(b))
}

// UnwindFor says which unwinding suits the postgres binary in binDir:
// UnwindFP when it was built with frame pointers (pg_config --cflags in
// binDir contains -fno-omit-frame-pointer), else UnwindDWARF, which also
// walks binaries without them (from .eh_frame) at the price of copying 16 kB
// of stack per sample. A pg_config that cannot run means UnwindDWARF.
func UnwindFor(ctx context.Context, binDir string) string {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "pg_config"), "--cflags").Output()
	if err != nil {
		return UnwindDWARF
	}
	// The last of -fomit/-fno-omit-frame-pointer wins, as in gcc.
	unwind := UnwindDWARF
	for _, f := range strings.Fields(string(out)) {
		switch f {
		case "-fno-omit-frame-pointer":
			unwind = UnwindFP
		case "-fomit-frame-pointer":
			unwind = UnwindDWARF
		}
	}
	return unwind
}

// tail is the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
