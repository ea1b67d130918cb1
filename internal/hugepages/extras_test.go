package hugepages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The runner's `reserve --persist` and `--overcommit` call Reserve with these
// options on the real root; here they run on a fake root so the host's
// vm.overcommit_memory is never set to 2.

func readRel(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

func TestPersistOnlyKeepsExistingFile(t *testing.T) {
	root := fakeRoot(t)
	k := Kernel{Root: root}
	old := "vm.nr_hugepages = 4\n"
	p := filepath.Join(root, PersistFile)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "hp.json")
	if _, err := k.Reserve(ReserveOptions{Pages: 32, Node: -1, StateFile: state, Persist: true}); err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	// A second reserve must keep the backup of the file from before the first.
	if _, err := k.Reserve(ReserveOptions{Pages: 64, Node: -1, StateFile: state, Persist: true}); err != nil {
		t.Fatalf("second Reserve: %v", err)
	}
	if got, want := readRel(t, root, PersistFile), "# Written by pgbench-runner hugepages reserve --persist.\nvm.nr_hugepages = 64\n"; got != want {
		t.Errorf("persist file = %q, want %q", got, want)
	}
	if got := readRel(t, root, "proc/sys/vm/overcommit_memory"); got != "0\n" {
		t.Errorf("overcommit_memory with --persist only = %q, want 0 (untouched)", got)
	}
	st, err := ReadState(state)
	if err != nil {
		t.Fatal(err)
	}
	if st.Persist == nil || !st.Persist.Existed || st.Persist.Content != old || len(st.Sysctls) != 0 {
		t.Errorf("state = %+v, want the persist backup %q and no sysctls", st, old)
	}
	if _, err := k.Release(state); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := readRel(t, root, PersistFile); got != old {
		t.Errorf("persist file after release = %q, want %q", got, old)
	}
}

func TestOvercommitOnly(t *testing.T) {
	root := fakeRoot(t)
	k := Kernel{Root: root}
	state := filepath.Join(t.TempDir(), "hp.json")
	if _, err := k.Reserve(ReserveOptions{Pages: 16, Node: -1, StateFile: state, OvercommitRatio: 80}); err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if got := readRel(t, root, "proc/sys/vm/overcommit_memory"); got != "2\n" {
		t.Errorf("overcommit_memory = %q, want 2", got)
	}
	if got := readRel(t, root, "proc/sys/vm/overcommit_ratio"); got != "80\n" {
		t.Errorf("overcommit_ratio = %q, want 80", got)
	}
	if _, err := os.Stat(filepath.Join(root, PersistFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("persist file without --persist: %v, want none", err)
	}
	// Reserving again with another ratio keeps the original values for release.
	if _, err := k.Reserve(ReserveOptions{Pages: 16, Node: -1, StateFile: state, OvercommitRatio: 70}); err != nil {
		t.Fatalf("second Reserve: %v", err)
	}
	if _, err := k.Release(state); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := readRel(t, root, "proc/sys/vm/overcommit_memory"); got != "0\n" {
		t.Errorf("overcommit_memory after release = %q, want 0", got)
	}
	if got := readRel(t, root, "proc/sys/vm/overcommit_ratio"); got != "50\n" {
		t.Errorf("overcommit_ratio after release = %q, want 50", got)
	}
}

func TestPersistRejectsOtherPools(t *testing.T) {
	root := fakeRoot(t)
	for rel, v := range map[string]string{
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages":   "0\n",
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages": "0\n",
	} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v), 0o644)
	}
	k := Kernel{Root: root}
	state := filepath.Join(t.TempDir(), "hp.json")
	if _, err := k.Reserve(ReserveOptions{Pages: 4, Node: 0, StateFile: state, Persist: true}); err == nil {
		t.Errorf("Reserve --persist --node 0: nil error, want one (persist covers the global pool only)")
	}
	if _, err := os.Stat(filepath.Join(root, PersistFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("persist file after rejected --persist: %v, want none", err)
	}
	if got := readRel(t, root, "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"); got != "0\n" {
		t.Errorf("node0 pool after rejected --persist = %q, want 0 (untouched)", got)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state after rejected --persist: %v, want none", err)
	}
}
