package hugepages

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestPlan(t *testing.T) {
	const gib = int64(1 << 30)
	p, err := PlanFraction(0.25, DefaultPageSize, 128*gib)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pages != 16384 || p.Bytes != 32*gib || p.RemainingBytes != 96*gib || p.MemoryFractionOfTotal != 0.25 {
		t.Errorf("PlanFraction(0.25, 2MB, 128GiB) = %+v, want 16384 pages, 32 GiB, 96 GiB left, 0.25", p)
	}
	if _, err := PlanFraction(1.5, DefaultPageSize, gib); err == nil {
		t.Errorf("PlanFraction(1.5) error = nil, want error")
	}
	b := PlanBytes(2*gib+1, DefaultPageSize, 8*gib)
	if b.Pages != 1025 || b.SharedMemorySizeBytes != 2*gib+1 {
		t.Errorf("PlanBytes(2GiB+1) = %+v, want 1025 pages rounding up", b)
	}
	if got := PlanPages(64, DefaultPageSize, gib).Bytes; got != 128<<20 {
		t.Errorf("PlanPages(64).Bytes = %d, want %d", got, 128<<20)
	}
}

func TestParsePageSize(t *testing.T) {
	for in, want := range map[string]int64{"2MB": 2 << 20, "2m": 2 << 20, "1GB": 1 << 30, "1G": 1 << 30} {
		got, err := ParsePageSize(in)
		if err != nil || got != want {
			t.Errorf("ParsePageSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	if _, err := ParsePageSize("3MB"); err == nil {
		t.Errorf("ParsePageSize(3MB) error = nil, want error")
	}
}

func readCount(t *testing.T) int64 {
	t.Helper()
	n, err := readInt("/proc/sys/vm/nr_hugepages")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReserveRelease(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	before := readCount(t)
	state := filepath.Join(t.TempDir(), "hp.json")
	k := Kernel{}
	r, err := k.Reserve(ReserveOptions{Pages: before + 64, Node: -1, StateFile: state})
	if err != nil {
		t.Fatalf("Reserve(%d): %v", before+64, err)
	}
	if r.Total < before+64 || r.Previous != before || r.Requested != before+64 {
		t.Errorf("Reserve = %+v, want total >= %d, previous %d", r, before+64, before)
	}
	if got := readCount(t); got != before+64 {
		t.Errorf("nr_hugepages after reserve = %d, want %d", got, before+64)
	}
	// A second reserve keeps the original previous count in the state file.
	if _, err := k.Reserve(ReserveOptions{Pages: before + 32, Node: -1, StateFile: state}); err != nil {
		t.Fatalf("second Reserve: %v", err)
	}
	if _, err := k.Release(state); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := readCount(t); got != before {
		t.Errorf("nr_hugepages after release = %d, want %d", got, before)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after release: stat err = %v, want not exist", err)
	}
}

func TestReserveNode(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	k := Kernel{}
	path := k.CountPath(DefaultPageSize, 0)
	if _, err := os.Stat(path); err != nil {
		testhost.Skip(t, "no per-node pool: %v", err)
	}
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	before, _ := readInt(path)
	state := filepath.Join(t.TempDir(), "hp.json")
	r, err := k.Reserve(ReserveOptions{Pages: before + 16, Node: 0, StateFile: state})
	if err != nil {
		t.Fatalf("Reserve node 0: %v", err)
	}
	if r.Node == nil || *r.Node != 0 || r.Total != before+16 {
		t.Errorf("Reserve node 0 = %+v, want node 0 total %d", r, before+16)
	}
	if _, err := k.Release(state); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got, _ := readInt(path); got != before {
		t.Errorf("node 0 count after release = %d, want %d", got, before)
	}
}

func TestReserveImpossible(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	prev := testhost.SaveSysctl(t, "vm.nr_hugepages")
	in, err := sysinfo.Read("/")
	if err != nil {
		t.Fatal(err)
	}
	// One page more than all of memory: the kernel can never give it.
	pages := in.MemoryTotalBytes/DefaultPageSize + 1
	state := filepath.Join(t.TempDir(), "hp.json")
	_, err = Kernel{}.Reserve(ReserveOptions{Pages: pages, Node: -1, StateFile: state})
	var se *ShortfallError
	if !errors.As(err, &se) {
		t.Fatalf("Reserve(%d) error = %v, want *ShortfallError", pages, err)
	}
	want := "requested " + strconv.FormatInt(pages, 10) + " pages of 2 MB, the kernel gave "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "fewer pages") {
		t.Errorf("error = %q, want prefix %q and advice", err, want)
	}
	if se.Got >= pages {
		t.Errorf("kernel gave %d, want fewer than %d", se.Got, pages)
	}
	t.Logf("kernel gave %d of %d pages", se.Got, pages)
	b, _ := os.ReadFile("/proc/sys/vm/nr_hugepages")
	if string(b) != prev {
		t.Errorf("nr_hugepages after shortfall = %q, want %q", b, prev)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after shortfall: stat err = %v, want not exist", err)
	}
}
