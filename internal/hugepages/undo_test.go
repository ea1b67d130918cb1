package hugepages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReleaseTwice(t *testing.T) {
	root := fakeRoot(t)
	k := Kernel{Root: root}
	state := filepath.Join(t.TempDir(), "hp.json")
	if _, err := k.Reserve(ReserveOptions{Pages: 16, Node: -1, StateFile: state}); err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if r, err := k.Release(state); err != nil || r.NoState {
		t.Fatalf("first Release = %+v, %v; want a real release", r, err)
	}
	// The pool grows again by other means: a second release must leave it.
	count := filepath.Join(root, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
	free := filepath.Join(root, "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
	os.WriteFile(count, []byte("8\n"), 0o644)
	os.WriteFile(free, []byte("5\n"), 0o644)
	r, err := k.Release(state)
	if err != nil {
		t.Fatalf("second Release: %v, want success", err)
	}
	want := Reserved{Requested: 8, Total: 8, Free: 5, Previous: 8, PageSizeBytes: DefaultPageSize, NoState: true}
	if *r != want {
		t.Errorf("second Release = %+v, want %+v", *r, want)
	}
	b, _ := os.ReadFile(count)
	if got := string(b); got != "8\n" {
		t.Errorf("nr_hugepages after second release = %q, want 8 (untouched)", got)
	}
}

func TestReleaseCorruptState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "hp.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Kernel{Root: fakeRoot(t)}.Release(state)
	if err == nil {
		t.Fatalf("Release of corrupt state = %+v, nil; want an error", r)
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Errorf("Release of corrupt state: %v, want a parse error", err)
	}
}
