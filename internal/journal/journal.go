// Package journal is the skeleton of the journals that let long work
// resume (a campaign's runs, a bisect's builds and steps): a file of JSON
// lines that opens with a header naming the work, then one line per
// finished piece of it, each synced to disk before the work goes on.
//
// Open replays an existing journal and refuses one of other work, or
// starts a new one with its header; Append records a line. The lines
// themselves are the caller's type L, which holds either the header H or
// a record of the work, as Format says.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// Format is how the lines L of a journal hold its header H.
type Format[H, L any] struct {
	// Header is the header l holds, or nil when it records something else.
	Header func(l L) *H
	// Line is the line that holds h.
	Line func(h *H) L
}

// File is an open journal, appended to line by line.
type File[H, L any] struct {
	// Header is the journal's header: the existing journal's when it was
	// resumed, else the one it was started with.
	Header H
	format Format[H, L]
	f      *os.File
}

// Open opens the journal at path for h's work. An existing journal is
// replayed: each of its lines but the header goes to replay, in order, and
// its header to check, whose error (a journal of other work) Open returns.
// With fresh, an existing journal is moved aside to path.<now>.old first,
// and a new one started. A new journal starts with h. A last line a crash
// cut short is dropped from the file, as is a journal whose header was
// never written whole.
func Open[H, L any](path string, format Format[H, L], h H, fresh bool, now time.Time, check func(old H) error, replay func(L)) (*File[H, L], error) {
	b, err := atomicfile.ReadJSONLines(path, fresh, now)
	if err != nil {
		return nil, err
	}
	j := &File[H, L]{Header: h, format: format}
	if len(b) > 0 {
		old, err := replayLines(b, path, format, replay)
		if err != nil {
			return nil, err
		}
		if err := check(*old); err != nil {
			return nil, err
		}
		j.Header = *old
	}
	if j.f, err = atomicfile.OpenJSONLines(path, len(b)); err != nil {
		return nil, err
	}
	if len(b) == 0 {
		if err := j.Append(format.Line(&h)); err != nil {
			j.f.Close()
			return nil, err
		}
	}
	return j, nil
}

// Read replays the journal at path as Open does, without opening it for
// appending, and returns its header; ok is false when there is no journal
// (missing, or empty).
func Read[H, L any](path string, format Format[H, L], replay func(L)) (h H, ok bool, err error) {
	b, err := atomicfile.ReadJSONLines(path, false, time.Time{})
	if err != nil || len(b) == 0 {
		return h, false, err
	}
	old, err := replayLines(b, path, format, replay)
	if err != nil {
		return h, false, err
	}
	return *old, true, nil
}

// ReadHeader returns the header of the journal at path, from its first
// line alone; ok is false when there is none (no journal, or a first line
// that is not a whole header).
func ReadHeader[H, L any](path string, format Format[H, L]) (h H, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return h, false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return h, false
	}
	var l L
	if json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &l) != nil {
		return h, false
	}
	if p := format.Header(l); p != nil {
		return *p, true
	}
	return h, false
}

// replayLines passes the lines b of the journal at path but the header to
// replay, and returns the header. A journal without one is an error.
func replayLines[H, L any](b []byte, path string, format Format[H, L], replay func(L)) (*H, error) {
	var h *H
	err := atomicfile.EachJSONLine(b, path, func(l L) {
		if p := format.Header(l); p != nil {
			h = p
			return
		}
		replay(l)
	})
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("journal %s has no header line", path)
	}
	return h, nil
}

// Append records l at the end of the journal and syncs it: once it
// returns, l survives a crash.
func (j *File[H, L]) Append(l L) error { return atomicfile.AppendJSONLine(j.f, l) }

// Close closes the journal's file.
func (j *File[H, L]) Close() error { return j.f.Close() }
