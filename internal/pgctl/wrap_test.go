package pgctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestParseControlData(t *testing.T) {
	out := "pg_control version number:            1300\nCatalog version number:               202209061\n" +
		"Database system identifier:           7312345678901234567\nDatabase cluster state:               shut down\n"
	m := ParseControlData(out)
	for k, want := range map[string]string{"Catalog version number": "202209061", "Database cluster state": "shut down", "pg_control version number": "1300"} {
		if got := m[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestStartWrappedPinsPostmaster starts a real server under numactl and
// checks the postmaster's CPU affinity, and reads the catalog version.
func TestStartWrappedPinsPostmaster(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", pg15)
	numactl := testhost.RequireCommand(t, "numactl")
	ctx := context.Background()
	c, cleanup, err := Scratch(ctx, pg15, map[string]string{"shared_buffers": "16MB", "huge_pages": "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	cat, err := c.CatalogVersion(ctx)
	if err != nil || !regexp.MustCompile(`^\d{9}$`).MatchString(cat) {
		t.Errorf("CatalogVersion = %q, %v, want a 9-digit number", cat, err)
	}
	c.Wrap = []string{numactl, "--physcpubind=0"}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	pidFile, err := os.ReadFile(filepath.Join(c.DataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := strings.Cut(string(pidFile), "\n")
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Cpus_allowed_list:\s*(\S+)`).FindSubmatch(status)
	if m == nil || string(m[1]) != "0" {
		t.Errorf("postmaster Cpus_allowed_list = %q, want 0", m)
	}
	if _, ok, err := c.HugePagesStatus(ctx); ok || err != nil {
		t.Errorf("HugePagesStatus on PostgreSQL 15 = ok %v, %v; want not available", ok, err)
	}
}

func TestSocketDirStaysUnderTheKernelLimit(t *testing.T) {
	short := &Cluster{DataDir: "/var/lib/pgbench/campaigns/0123456789abcdef/data/stock"}
	if got := short.SocketDir(); got != short.DataDir {
		t.Errorf("SocketDir(%s) = %s, want the data directory itself", short.DataDir, got)
	}
	long := &Cluster{DataDir: "/tmp/" + strings.Repeat("d", 100) + "/data/stock"}
	got := long.SocketDir()
	if got == long.DataDir || len(got)+len("/.s.PGSQL.65535") > maxSocketPath {
		t.Errorf("SocketDir(long) = %s, want a short directory elsewhere", got)
	}
	if again := long.SocketDir(); again != got {
		t.Errorf("SocketDir is not stable: %s then %s", got, again)
	}
}

// A start cancelled after pg_ctl launched the postmaster stops that server:
// the postmaster runs in a session of its own, so the cancel of pg_ctl's
// process group does not reach it.
func TestCancelledStartLeavesNoServer(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", pg15)
	c, cleanup, err := Scratch(context.Background(), pg15, map[string]string{"shared_buffers": "16MB", "huge_pages": "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// pg_ctl starts the server, then the wrapper keeps the start from
	// returning until the cancel.
	c.Wrap = []string{"sh", "-c", `"$@" && exec sleep 60`, "sh"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	pidFile := filepath.Join(c.DataDir, "postmaster.pid")
	var pid string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.Contains(string(b), "ready") {
			pid, _, _ = strings.Cut(string(b), "\n")
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Start returned %v before the server was ready", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready within a minute")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Start: err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Start did not return within 30s of the cancel")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join("/proc", pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(mustAtoi(t, pid), syscall.SIGQUIT)
			t.Fatalf("postmaster %s still running 5s after the cancelled Start returned", pid)
		}
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("postmaster.pid after the cancelled start: stat err = %v, want not exist", err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
