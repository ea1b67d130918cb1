package atomicfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// AppendJSONLine writes v as one JSON line at the end of f, which is open
// for appending, and syncs it: once it returns, the line survives a crash.
// It is what a journal does before it goes on; a crash during the write
// leaves a last line without its newline, which the journal's reader
// drops.
func AppendJSONLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode a line of %s: %w", f.Name(), err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	return nil
}

// ReadJSONLines reads the journal at path for a resume and returns its
// complete lines: a last line without its newline, a write a crash cut
// short, is left out. A missing journal has none. With fresh, a journal
// that has lines is first moved aside to path.<now>.old, and none are
// returned. The file itself is not changed otherwise: OpenJSONLines cuts
// it to what the caller kept.
func ReadJSONLines(path string, fresh bool, now time.Time) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && fresh && len(b) > 0:
		old := path + "." + now.UTC().Format("20060102T150405") + ".old"
		if err := os.Rename(path, old); err != nil {
			return nil, fmt.Errorf("move old journal aside: %w", err)
		}
		return nil, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read journal: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
	}
	return b, nil
}

// EachJSONLine decodes each line of b, lines ReadJSONLines read from
// path, into a new T and passes it to fn.
func EachJSONLine[T any](b []byte, path string, fn func(T)) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var l T
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("journal %s line %d: %w", path, n, err)
		}
		fn(l)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read journal %s: %w", path, err)
	}
	return nil
}

// OpenJSONLines opens the journal at path for appending, created if
// missing, after cutting it to its first size bytes, the lines the caller
// kept: a torn last line goes, and so does a torn header, so that a
// journal of size 0 starts over.
func OpenJSONLines(path string, size int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("truncate journal: %w", err)
	}
	return f, nil
}
