package remote

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// dialHost connects to a fresh test host (or to h when given).
func dialHost(t testing.TB, h *testhost.Host) *SSHExecutor {
	t.Helper()
	if h == nil {
		h = testhost.New(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := DialSSH(ctx, SSHConfig{Host: h.Addr, Port: h.Port, PrivateKey: h.ClientKeyPEM, HostKey: h.HostKeyLine})
	if err != nil {
		t.Fatalf("DialSSH: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// processesWith lists pids whose command line contains marker.
func processesWith(t testing.TB, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits until no process has marker on its command line.
func waitGone(t testing.TB, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		p := processesWith(t, marker)
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q still running after %s: %v", marker, within, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func uniqueMarker(t testing.TB) string {
	return strconv.FormatInt(time.Now().UnixNano(), 10) + strconv.Itoa(os.Getpid())
}
