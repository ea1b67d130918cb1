package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leftovers lists what besides the target is in dir.
func leftovers(t *testing.T, dir, target string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != filepath.Base(target) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFileReplacesContentAndSetsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o755, 0o600} {
		want := "new " + mode.String() + "\n"
		if err := WriteFile(p, []byte(want), mode); err != nil {
			t.Fatalf("WriteFile(%v): %v", mode, err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("content = %q, want %q", got, want)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("mode = %v, want %v", got, mode)
		}
	}
	if l := leftovers(t, dir, p); len(l) != 0 {
		t.Errorf("files left beside the target: %v", l)
	}
}

func TestWriteJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(p, map[string]int{"a": 1}, 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if want := "{\n  \"a\": 1\n}\n"; string(got) != want {
		t.Errorf("content = %q, want %q", got, want)
	}
}

// TestFailureKeepsOldFile covers each way a write can fail before the
// rename: the old file must be intact, no temporary file left, and the
// error must name the target.
func TestFailureKeepsOldFile(t *testing.T) {
	boom := errors.New("boom")
	for name, write := range map[string]func(p string) error{
		"marshal": func(p string) error { return WriteJSON(p, map[string]any{"f": func() {}}, 0o644) },
		"writer":  func(p string) error { return Write(p, 0o644, func(io.Writer) error { return boom }) },
		"partial": func(p string) error {
			return Write(p, 0o644, func(w io.Writer) error {
				io.WriteString(w, strings.Repeat("x", 1<<20))
				return boom
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.json")
			if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := write(p)
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("error = %v, want one naming %s", err, p)
			}
			if got, _ := os.ReadFile(p); string(got) != "old\n" {
				t.Errorf("content after a failed write = %q, want the old %q", got, "old\n")
			}
			if l := leftovers(t, dir, p); len(l) != 0 {
				t.Errorf("files left beside the target: %v", l)
			}
		})
	}
	if err := Write(filepath.Join(t.TempDir(), "f"), 0o644, func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("error = %v, want it to wrap %v", err, boom)
	}
}

func TestUnwritableDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if f, err := os.CreateTemp(dir, "probe-"); err == nil {
		// Root ignores directory permissions, but not an immutable
		// directory, where it can create nothing either.
		f.Close()
		os.Remove(f.Name())
		makeImmutable(t, dir)
	}
	err := WriteFile(p, []byte("new\n"), 0o644)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("error = %v, want one naming %s", err, p)
	}
	if got, _ := os.ReadFile(p); string(got) != "old\n" {
		t.Errorf("content = %q, want the old %q", got, "old\n")
	}
}

func TestMissingDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFile(p, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("error = %v, want one naming %s", err, p)
	}
}

// TestRenameFailureRemovesTemp: a target the rename cannot replace (a
// directory) is left alone and the temporary file goes.
func TestRenameFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(p, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new\n"), 0o644); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("error = %v, want one naming %s", err, p)
	}
	if _, err := os.Stat(filepath.Join(p, "keep")); err != nil {
		t.Errorf("target directory changed: %v", err)
	}
	if l := leftovers(t, dir, p); len(l) != 0 {
		t.Errorf("files left beside the target: %v", l)
	}
}
