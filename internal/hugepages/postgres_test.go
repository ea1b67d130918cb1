package hugepages

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pg15 = "/usr/lib/postgresql/15/bin"

func scratchCluster(t *testing.T, settings map[string]string) *pgctl.Cluster {
	t.Helper()
	testhost.RequireCommand(t, "postgres", pg15)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cleanup, err := pgctl.Scratch(ctx, pg15, settings)
	if err != nil {
		t.Fatalf("Scratch: %v", err)
	}
	t.Cleanup(cleanup)
	return c
}

func setPool(t *testing.T, pages int64) {
	t.Helper()
	// Shrink to 0 first so the pool is exactly pages, not pages plus leftovers.
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "hp.json")
	if _, err := (Kernel{}).Reserve(ReserveOptions{Pages: pages, Node: -1, StateFile: st}); err != nil {
		t.Fatalf("reserve %d pages: %v", pages, err)
	}
}

// TestPlannedPoolStartsPostgres checks the whole procedure against the real
// PostgreSQL 15: the page count it reports is exactly what it needs to start
// with huge_pages=on, and one page fewer makes it refuse to start with an
// explicit huge pages error.
func TestPlannedPoolStartsPostgres(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	c := scratchCluster(t, map[string]string{"shared_buffers": "256MB", "huge_pages": "on"})
	ctx := context.Background()
	sm, err := c.SharedMemorySize(ctx)
	if err != nil {
		t.Fatalf("SharedMemorySize: %v", err)
	}
	t.Logf("shared_buffers 256MB: segment %d bytes, %d huge pages", sm.Bytes, sm.HugePages)

	setPool(t, sm.HugePages-1)
	err = c.Start(ctx)
	var he *pgctl.HugePagesError
	if !errors.As(err, &he) {
		if err == nil {
			c.Stop(ctx)
		}
		t.Fatalf("Start with %d pages: error = %v, want *HugePagesError", sm.HugePages-1, err)
	}
	if !strings.Contains(err.Error(), "huge pages misconfiguration") {
		t.Errorf("error = %q, want it to say huge pages misconfiguration", err)
	}

	setPool(t, sm.HugePages)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start with the planned %d pages: %v", sm.HugePages, err)
	}
	defer c.Stop(ctx)
	if v, err := c.Show(ctx, "huge_pages"); err == nil && v != "on" {
		t.Errorf("huge_pages = %q, want on", v)
	}
	if got, err := ServerStatus(ctx, c); err != nil || got != "on" {
		t.Errorf("ServerStatus = %q, %v, want on", got, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}
