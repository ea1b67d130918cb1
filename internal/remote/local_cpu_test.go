package remote

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunLocalCPUTime checks what the campaign's client-saturation check
// reads: the pid of the started process, and its CPU time, which must be
// what the process itself counts (the shell's times builtin), whatever
// share of a CPU a loaded machine gives it.
func TestRunLocalCPUTime(t *testing.T) {
	var pid int
	res, err := RunLocal(context.Background(), Command{
		Args:    []string{"sh", "-c", "echo $$; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; times"},
		OnStart: func(p int) { pid = p },
	}, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) < 2 || lines[0] != strconv.Itoa(pid) || pid == os.Getpid() {
		t.Fatalf("OnStart got pid %d, the shell says %q", pid, res.Stdout)
	}
	self := shellTimes(t, lines[1])
	cpu := res.UserTime + res.SystemTime
	t.Logf("busy loop: %v of CPU in %v; the shell counted %v", cpu, res.Duration, self)
	if res.UserTime <= 0 || cpu > res.Duration+res.Duration/10 {
		t.Errorf("CPU time user %v + system %v over %v of wall time: want user time > 0 and no more than the wall time", res.UserTime, res.SystemTime, res.Duration)
	}
	// The shell's own count, taken just before it exits, misses only its
	// exit: within a tenth and 20 ms (the builtin's resolution is 10 ms).
	if d := cpu - self; d < -20*time.Millisecond || d > self/10+20*time.Millisecond {
		t.Errorf("CPU time %v, the shell counted %v of its own: want the process's CPU time", cpu, self)
	}
}

// shellTimes is the user plus system time of the shell's times builtin's
// first line ("0m0.26s 0m0.00s").
func shellTimes(t *testing.T, line string) time.Duration {
	t.Helper()
	var total time.Duration
	for _, f := range strings.Fields(line) {
		m, s, ok := strings.Cut(strings.TrimSuffix(f, "s"), "m")
		mins, err1 := strconv.Atoi(m)
		secs, err2 := strconv.ParseFloat(s, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("times printed %q", line)
		}
		total += time.Duration(mins)*time.Minute + time.Duration(secs*float64(time.Second))
	}
	return total
}
