package tune

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestApplyRevertFake(t *testing.T) {
	root := fakeHost(t, 4, "powersave")
	// CPU 2 differs: revert must restore each CPU's own value.
	gov2 := filepath.Join(root, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor")
	os.WriteFile(gov2, []byte("schedutil\n"), 0o644)
	tu := Tuner{Root: root}
	state := filepath.Join(t.TempDir(), "tune.json")
	want := map[string]string{Governor: "performance", NUMABalancing: "off"}
	res, err := tu.Apply(want, state, false)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, c := range res.Changes {
		if c.Status != Applied {
			t.Errorf("%s status = %s, want %s", c.Knob, c.Status, Applied)
		}
	}
	if got := readFile(t, gov2); got != "performance\n" {
		t.Errorf("cpu2 governor = %q, want performance", got)
	}
	// Applying again is idempotent and keeps the original previous values.
	res, err = tu.Apply(want, state, false)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	for _, c := range res.Changes {
		if c.Status != Unchanged {
			t.Errorf("second apply %s status = %s, want %s", c.Knob, c.Status, Unchanged)
		}
	}
	if _, err := tu.Revert(state); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if got := readFile(t, gov2); got != "schedutil\n" {
		t.Errorf("cpu2 governor after revert = %q, want schedutil", got)
	}
	if got := readFile(t, filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")); got != "powersave\n" {
		t.Errorf("cpu0 governor after revert = %q, want powersave", got)
	}
	if got := readFile(t, filepath.Join(root, "proc/sys/kernel/numa_balancing")); got != "1\n" {
		t.Errorf("numa_balancing after revert = %q, want 1", got)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state after revert: %v, want removed", err)
	}
}

func TestUnsupported(t *testing.T) {
	tu := Tuner{Root: t.TempDir()} // an empty tree has no knobs at all
	state := filepath.Join(t.TempDir(), "tune.json")
	res, err := tu.Apply(map[string]string{Governor: "performance"}, state, false)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != Unsupported {
		t.Errorf("changes = %+v, want one unsupported", res.Changes)
	}
	if _, err := tu.Apply(map[string]string{Governor: "performance"}, state, true); err == nil {
		t.Errorf("strict Apply error = nil, want error")
	}
	if _, err := tu.Apply(map[string]string{THP: "sometimes"}, state, false); err == nil {
		t.Errorf("Apply thp=sometimes error = nil, want error")
	}
}

// TestApplyRevertReal changes the real knobs and checks every one is back.
func TestApplyRevertReal(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	tu := Tuner{}
	before := map[string]string{}
	for _, k := range []string{NUMABalancing, THP, Governor} {
		files, err := tu.files(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			before[f] = readFile(t, f)
			f := f
			b := before[f]
			t.Cleanup(func() { os.WriteFile(f, []byte(b), 0o644) }) // safety net only
		}
	}
	thp := "never"
	if m, _ := read(THP, "/sys/kernel/mm/transparent_hugepage/enabled"); m == "never" {
		thp = "madvise"
	}
	nb := "on"
	if v := readFile(t, "/proc/sys/kernel/numa_balancing"); v == "1\n" {
		nb = "off"
	}
	state := filepath.Join(t.TempDir(), "tune.json")
	res, err := tu.Apply(map[string]string{NUMABalancing: nb, THP: thp, Governor: "performance"}, state, false)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	t.Logf("apply: %+v", res.Changes)
	for _, c := range res.Changes {
		if c.Knob == THP && c.Status != Applied {
			t.Errorf("thp status = %s (%s), want applied", c.Status, c.Reason)
		}
	}
	if m, _ := read(THP, "/sys/kernel/mm/transparent_hugepage/enabled"); m != thp {
		t.Errorf("thp after apply = %s, want %s", m, thp)
	}
	if _, err := tu.Revert(state); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	for f, want := range before {
		if got := readFile(t, f); got != want {
			t.Errorf("%s after revert = %q, want %q", f, got, want)
		}
	}
}
