package pgctl

import (
	"context"
	"testing"
	"time"

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
	testhost.SkipShort(t, "a scratch PostgreSQL cluster (initdb)")
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
