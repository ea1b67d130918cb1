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
