package main

import (
	"encoding/json"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestPagetablesShape checks the seed's shape on a small scale: with 4 kB
// pages each backend that touches S bytes of shared_buffers needs about S/512
// of page tables; with 2 MB pages almost none.
func TestPagetablesShape(t *testing.T) {
	const bin = "/usr/lib/postgresql/15/bin"
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", bin)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	code, out, errOut := runCapture(t, "pagetables", "--bin", bin, "--shared-buffers", "128MB", "--connections", "3", "--json")
	if code != 0 {
		t.Fatalf("exit = %d, want 0; stderr %s", code, errOut)
	}
	var res hugepages.PageTablesResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Runs[0].HugePages != "off" || res.Runs[1].HugePages != "on" {
		t.Fatalf("runs = %+v, want off then on", res.Runs)
	}
	t.Logf("%s", out)
	off, on := res.Runs[0], res.Runs[1]
	// About 80% of shared_buffers is touched: ~205 kB of PTEs for 128 MB; allow half.
	if min := int64(128<<20) * 8 / 10 / 512 / 2; off.SharedSegmentPerConnection < min {
		t.Errorf("4 kB pages: shared segment page tables per connection = %d, want at least %d", off.SharedSegmentPerConnection, min)
	}
	if on.SharedSegmentPerConnection >= off.SharedSegmentPerConnection/4 {
		t.Errorf("2 MB pages: shared segment page tables per connection = %d, want under a quarter of %d", on.SharedSegmentPerConnection, off.SharedSegmentPerConnection)
	}
	if res.Ratio <= 1 {
		t.Errorf("ratio = %v, want above 1", res.Ratio)
	}
}
