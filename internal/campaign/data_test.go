package campaign

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
)

func TestLockOut(t *testing.T) {
	dir := t.TempDir()
	release, err := lockOut(dir)
	if err != nil {
		t.Fatalf("first lockOut: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), fmt.Sprint(os.Getpid()); got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	// flock belongs to the open file, so a second open in this process
	// conflicts just as another runner would.
	_, err = lockOut(dir)
	want := fmt.Sprintf("campaign %s is in use by another pgbench-runner (pid %d)", dir, os.Getpid())
	if err == nil || err.Error() != want {
		t.Fatalf("second lockOut error = %v, want %q", err, want)
	}
	if _, err := RemoveData(context.Background(), dir, ""); err == nil || err.Error() != want {
		t.Errorf("RemoveData while locked: error = %v, want %q", err, want)
	}
	release()
	release2, err := lockOut(dir)
	if err != nil {
		t.Fatalf("lockOut after release: %v", err)
	}
	release2()
}

func TestIsPostmasterOf(t *testing.T) {
	dataDir := t.TempDir()
	if isPostmasterOf(os.Getpid(), dataDir, dataDir) {
		t.Errorf("isPostmasterOf(test process %d) = true, want false", os.Getpid())
	}
	// A real process whose executable is named postgres.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "postgres")
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	for _, tc := range []struct {
		name   string
		pidDir string
		want   bool
	}{
		{"pid file names the data dir", dataDir, true},
		{"pid file names the data dir, unclean", dataDir + "/./", true},
		{"pid file names another dir", t.TempDir(), false},
		{"no data dir line", "", false},
	} {
		if got := isPostmasterOf(pid, dataDir, tc.pidDir); got != tc.want {
			t.Errorf("%s: isPostmasterOf = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStopStaleSparesOtherProcess: a leftover postmaster.pid naming a live
// process that is not PostgreSQL (the test itself) must not be signalled.
func TestStopStaleSparesOtherProcess(t *testing.T) {
	dataDir := t.TempDir()
	// The sleeper stands in for a random process that reused the pid.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("start sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pidFile := fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, dataDir)
	if err := os.WriteFile(filepath.Join(dataDir, "postmaster.pid"), []byte(pidFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := stopStale(context.Background(), dataDir); err != nil {
		t.Fatalf("stopStale: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("sleep %d after stopStale: %v, want it still running", cmd.Process.Pid, err)
	}
}

// renderConf keeps initdb's postgresql.conf aside once, and each render
// starts from it: settings of an earlier render never pile up.
func TestRenderConfStartsFromBase(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "postgresql.conf")
	const initdb = "# from initdb\nmax_connections = 100\n"
	if err := os.WriteFile(conf, []byte(initdb), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &pgctl.Cluster{DataDir: dir}
	if err := renderConf(c, map[string]string{"work_mem": "4MB"}); err != nil {
		t.Fatalf("first render: %v", err)
	}
	if err := renderConf(c, map[string]string{"shared_buffers": "1GB"}); err != nil {
		t.Fatalf("second render: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, baseConf)); err != nil || string(b) != initdb {
		t.Fatalf("base config = %q, %v, want initdb's %q", b, err, initdb)
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, initdb) || !strings.Contains(got, "shared_buffers = '1GB'") || strings.Contains(got, "work_mem") {
		t.Fatalf("postgresql.conf = %q, want initdb's lines and shared_buffers only", got)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("postgresql.conf mode = %v, %v, want 0600", fi.Mode().Perm(), err)
	}
}
