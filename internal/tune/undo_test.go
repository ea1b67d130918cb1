package tune

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRevertTwice(t *testing.T) {
	root := fakeHost(t, 2, "powersave")
	tu := Tuner{Root: root}
	state := filepath.Join(t.TempDir(), "tune.json")
	if _, err := tu.Apply(map[string]string{NUMABalancing: "off"}, state, false); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if res, err := tu.Revert(state); err != nil || res.NoState {
		t.Fatalf("first Revert = %+v, %v; want a real revert", res, err)
	}
	// Someone changes the knob after the revert: a second revert must not
	// touch it, since it has nothing recorded.
	nb := filepath.Join(root, "proc/sys/kernel/numa_balancing")
	if err := os.WriteFile(nb, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := tu.Revert(state)
	if err != nil {
		t.Fatalf("second Revert: %v, want success", err)
	}
	if !res.NoState || len(res.Changes) != 0 {
		t.Errorf("second Revert = %+v, want NoState and no changes", res)
	}
	if res.Changes == nil {
		t.Errorf("second Revert changes = nil, want an empty list (JSON [])")
	}
	if got := readFile(t, nb); got != "0\n" {
		t.Errorf("numa_balancing after second revert = %q, want 0 (untouched)", got)
	}
}

func TestRevertCorruptState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "tune.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Tuner{Root: fakeHost(t, 1, "powersave")}.Revert(state)
	if err == nil {
		t.Fatalf("Revert of corrupt state = %+v, nil; want an error", res)
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Errorf("Revert of corrupt state: %v, want a parse error", err)
	}
	if _, serr := os.Stat(state); serr != nil {
		t.Errorf("corrupt state file after failed revert: %v, want kept", serr)
	}
}
