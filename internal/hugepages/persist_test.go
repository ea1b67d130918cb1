package hugepages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeRoot is a tree where sysfs/procfs files are plain files: a write reads
// back as written, so the whole reserve/release path runs without touching
// the host.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel, v := range map[string]string{
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":   "0\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "0\n",
		"proc/sys/vm/overcommit_memory":                           "0\n",
		"proc/sys/vm/overcommit_ratio":                            "50\n",
		"proc/sys/vm/drop_caches":                                 "",
		"proc/sys/vm/compact_memory":                              "",
	} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

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
