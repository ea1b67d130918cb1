package statefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	type rec struct {
		Path     string `json:"path"`
		Previous int    `json:"previous"`
	}
	p := filepath.Join(t.TempDir(), "state.json")
	want := rec{Path: "/proc/sys/vm/nr_hugepages", Previous: 7}
	if err := Write(p, want); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	var got rec
	if err := Read(p, &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}

func TestReadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	var v map[string]any
	for _, p := range []string{bad, filepath.Join(dir, "missing.json")} {
		if err := Read(p, &v); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Read(%s) error = %v, want one naming the file", p, err)
		}
	}
}

// TestWriteErrorKeepsRecord: a record that cannot be encoded is an error
// and the previous record stays readable.
func TestWriteErrorKeepsRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if err := Write(p, map[string]int{"previous": 7}); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, map[string]any{"previous": make(chan int)}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("Write of an unencodable record = %v, want an error naming %s", err, p)
	}
	var got map[string]int
	if err := Read(p, &got); err != nil || got["previous"] != 7 {
		t.Errorf("record after a failed write = %v, %v; want the old one", got, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("record mode = %v, want 0600", got)
	}
}
