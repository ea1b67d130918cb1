package remote

import (
	"bytes"
	"sync"
)

// lineWriter keeps everything written to it and hands each complete line to
// fn as soon as its newline arrives, so callers see progress while the
// command is still running. filter, when set, sees each line first and
// returns false to drop it from both the buffer and fn (used for the SSH
// wrapper's marker lines).
type lineWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	part   []byte
	fn     func(string)
	filter func(string) bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.filter == nil && w.fn == nil {
		w.buf.Write(p)
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.part = append(w.part, p...)
			break
		}
		line := append(w.part, p[:i]...)
		w.part = nil
		p = p[i+1:]
		w.emit(string(line), true)
	}
	return n, nil
}

func (w *lineWriter) emit(line string, nl bool) {
	if w.filter != nil && !w.filter(line) {
		return
	}
	w.buf.WriteString(line)
	if nl {
		w.buf.WriteByte('\n')
	}
	if w.fn != nil {
		w.fn(line)
	}
}

// finish flushes a last line that had no newline and returns all output.
func (w *lineWriter) finish() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part) > 0 {
		w.emit(string(w.part), false)
		w.part = nil
	}
	return bytes.Clone(w.buf.Bytes())
}
