package pgctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pg15 = "/usr/lib/postgresql/15/bin"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"145MB": 145 << 20, "8kB": 8 << 10, "2GB": 2 << 30, "42": 42} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	if _, err := ParseSize("3XB"); err == nil {
		t.Errorf("ParseSize(3XB) error = nil, want error")
	}
}

func TestQuoteValue(t *testing.T) {
	if got, want := QuoteValue(`it's \`), `'it''s \\'`; got != want {
		t.Errorf("QuoteValue = %s, want %s", got, want)
	}
}

func TestHugePagesFailureRecognised(t *testing.T) {
	log := "FATAL:  could not map anonymous shared memory: Cannot allocate memory\n" +
		"HINT:  This error usually means that PostgreSQL's request for a shared memory segment exceeded available memory, swap space, or huge pages."
	if !isHugePagesFailure(log) {
		t.Errorf("isHugePagesFailure(%q) = false, want true", log)
	}
	if isHugePagesFailure("FATAL:  lock file \"postmaster.pid\" already exists") {
		t.Errorf("isHugePagesFailure(lock file) = true, want false")
	}
}

func scratch(t *testing.T, settings map[string]string) *Cluster {
	t.Helper()
	testhost.RequireCommand(t, "postgres", pg15)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cleanup, err := Scratch(ctx, pg15, settings)
	if err != nil {
		t.Fatalf("Scratch: %v", err)
	}
	t.Cleanup(cleanup)
	return c
}

func TestSharedMemorySize(t *testing.T) {
	c := scratch(t, map[string]string{"shared_buffers": "128MB"})
	sm, err := c.SharedMemorySize(context.Background())
	if err != nil {
		t.Fatalf("SharedMemorySize: %v", err)
	}
	// The segment holds more than shared_buffers (descriptors, WAL buffers, locks).
	if sm.Bytes <= 128<<20 {
		t.Errorf("shared_memory_size = %d, want more than shared_buffers %d", sm.Bytes, 128<<20)
	}
	if want := (sm.Bytes + (2<<20 - 1)) / (2 << 20); sm.HugePages != want {
		t.Errorf("shared_memory_size_in_huge_pages = %d, want %d", sm.HugePages, want)
	}
	t.Logf("shared_buffers 128MB: segment %d bytes, %d huge pages", sm.Bytes, sm.HugePages)
}

func setPool(t *testing.T, pages int64) {
	t.Helper()
	// Shrink to 0 first so the pool is exactly pages, not pages plus leftovers.
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "hp.json")
	if _, err := (hugepages.Kernel{}).Reserve(hugepages.ReserveOptions{Pages: pages, Node: -1, StateFile: st}); err != nil {
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
	c := scratch(t, map[string]string{"shared_buffers": "256MB", "huge_pages": "on"})
	ctx := context.Background()
	sm, err := c.SharedMemorySize(ctx)
	if err != nil {
		t.Fatalf("SharedMemorySize: %v", err)
	}
	t.Logf("shared_buffers 256MB: segment %d bytes, %d huge pages", sm.Bytes, sm.HugePages)

	setPool(t, sm.HugePages-1)
	err = c.Start(ctx)
	var he *HugePagesError
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
	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}
