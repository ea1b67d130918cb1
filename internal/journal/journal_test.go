package journal

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type header struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
}

type line struct {
	Header *header `json:"header,omitempty"`
	Done   string  `json:"done,omitempty"`
}

var format = Format[header, line]{
	Header: func(l line) *header { return l.Header },
	Line:   func(h *header) line { return line{Header: h} },
}

var errOther = errors.New("a journal of other work")

// open opens the journal at path for the work name and returns it with
// the lines it replayed.
func open(t *testing.T, path, name string, fresh bool, now time.Time) (*File[header, line], []string, error) {
	t.Helper()
	var done []string
	check := func(old header) error {
		if old.Name != name {
			return errOther
		}
		return nil
	}
	j, err := Open(path, format, header{Name: name, Start: now}, fresh, now, check, func(l line) { done = append(done, l.Done) })
	return j, done, err
}

func TestOpenAppendResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	j, done, err := open(t, path, "w", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 0 || !j.Header.Start.Equal(t0) {
		t.Fatalf("new journal: replayed %q, header %+v; want nothing and the given header", done, j.Header)
	}
	for _, d := range []string{"a", "b"} {
		if err := j.Append(line{Done: d}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	b, _ := os.ReadFile(path)
	want := `{"header":{"name":"w","start":"2025-01-02T03:04:05Z"}}` + "\n" + `{"done":"a"}` + "\n" + `{"done":"b"}` + "\n"
	if string(b) != want {
		t.Fatalf("journal =\n%s\nwant\n%s", b, want)
	}

	// A crash in the middle of a line: the resume drops it, from the
	// file too, and appends after the last whole line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"done":"c`)
	f.Close()
	j, done, err = open(t, path, "w", false, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(done, []string{"a", "b"}) || !j.Header.Start.Equal(t0) {
		t.Fatalf("resumed journal: replayed %q, header %+v; want [a b] and the journal's header (start %v)", done, j.Header, t0)
	}
	j.Append(line{Done: "c"})
	j.Close()
	b, _ = os.ReadFile(path)
	if got, want := string(b), want+`{"done":"c"}`+"\n"; got != want {
		t.Fatalf("journal after the torn line =\n%s\nwant\n%s", got, want)
	}

	// Read replays it without changing it; ReadHeader reads the header.
	var read []string
	h, ok, err := Read(path, format, func(l line) { read = append(read, l.Done) })
	if err != nil || !ok || h.Name != "w" || !reflect.DeepEqual(read, []string{"a", "b", "c"}) {
		t.Errorf("Read = %+v, %v, %v, lines %q; want header w, lines [a b c]", h, ok, err, read)
	}
	if h, ok := ReadHeader(path, format); !ok || h.Name != "w" || !h.Start.Equal(t0) {
		t.Errorf("ReadHeader = %+v, %v; want header w", h, ok)
	}
}

func TestOpenRefusesOtherWork(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	j, _, err := open(t, path, "w", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(line{Done: "a"})
	j.Close()
	before, _ := os.ReadFile(path)
	if _, _, err := open(t, path, "other", false, t0); !errors.Is(err, errOther) {
		t.Fatalf("open for other work = %v, want %v", err, errOther)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("a refused journal changed:\n%s\nwas\n%s", after, before)
	}
	// Fresh moves it aside and starts over.
	j, done, err := open(t, path, "other", true, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if len(done) != 0 || j.Header.Name != "other" {
		t.Errorf("fresh journal: replayed %q, header %+v", done, j.Header)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "j.jsonl.*.old"))
	if len(old) != 1 {
		t.Fatalf("journals moved aside: %v, want one", old)
	}
	if b, _ := os.ReadFile(old[0]); string(b) != string(before) {
		t.Errorf("the journal moved aside holds\n%s\nwant\n%s", b, before)
	}
}

func TestNoJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	if _, ok, err := Read(path, format, func(line) { t.Error("a missing journal replayed a line") }); ok || err != nil {
		t.Errorf("Read of a missing journal = %v, %v; want none", ok, err)
	}
	if _, ok := ReadHeader(path, format); ok {
		t.Error("ReadHeader of a missing journal found a header")
	}
	// Lines without a header are not a journal to resume.
	os.WriteFile(path, []byte(`{"done":"a"}`+"\n"), 0o644)
	if _, _, err := open(t, path, "w", false, time.Now()); err == nil || !strings.Contains(err.Error(), "has no header line") {
		t.Errorf("open of a journal without a header = %v, want a no header line error", err)
	}
	if _, ok := ReadHeader(path, format); ok {
		t.Error("ReadHeader found a header in a journal without one")
	}
	// A header a crash cut short: the journal starts over.
	os.WriteFile(path, []byte(`{"header":{"na`), 0o644)
	j, done, err := open(t, path, "w", false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if h, ok := ReadHeader(path, format); len(done) != 0 || !ok || h.Name != "w" {
		t.Errorf("after a torn header: replayed %q, header %+v (%v); want a new journal for w", done, h, ok)
	}
}
