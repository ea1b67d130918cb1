package remote

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRunLocalCPUTime checks what the campaign's client-saturation check
// reads: the pid of the started process, and its CPU time, which a busy
// loop makes most of its wall time.
func TestRunLocalCPUTime(t *testing.T) {
	var pid int
	res, err := RunLocal(context.Background(), Command{
		Args:    []string{"sh", "-c", "echo $$; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"},
		OnStart: func(p int) { pid = p },
	}, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(pid) || pid == os.Getpid() {
		t.Errorf("OnStart got pid %d, the shell says it is %s", pid, got)
	}
	cpu := res.UserTime + res.SystemTime
	t.Logf("busy loop: %v of CPU in %v", cpu, res.Duration)
	if res.UserTime <= 0 || cpu > res.Duration+res.Duration/10 || cpu < res.Duration/4 {
		t.Errorf("CPU time user %v + system %v over %v of wall time: want most of it, and user time > 0", res.UserTime, res.SystemTime, res.Duration)
	}
}
