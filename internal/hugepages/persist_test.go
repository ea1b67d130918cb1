package hugepages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPersistOvercommitRoundTrip(t *testing.T) {
	root := fakeRoot(t)
	k := Kernel{Root: root}
	state := filepath.Join(t.TempDir(), "hp.json")
	if _, err := k.Reserve(ReserveOptions{Pages: 128, Node: -1, StateFile: state, Persist: true, OvercommitRatio: 90}); err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	check := func(rel, want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("read %s: %v", rel, err)
			return
		}
		if string(b) != want {
			t.Errorf("%s = %q, want %q", rel, b, want)
		}
	}
	check("proc/sys/vm/overcommit_memory", "2\n")
	check("proc/sys/vm/overcommit_ratio", "90\n")
	check(PersistFile, "# Written by pgbench-runner hugepages reserve --persist.\nvm.nr_hugepages = 128\n")
	if _, err := k.Release(state); err != nil {
		t.Fatalf("Release: %v", err)
	}
	check("proc/sys/vm/overcommit_memory", "0\n")
	check("proc/sys/vm/overcommit_ratio", "50\n")
	check("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0\n")
	if _, err := os.Stat(filepath.Join(root, PersistFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("persist file after release: %v, want removed", err)
	}
}
