package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// DownloadResult reports what Download copied.
type DownloadResult struct {
	Bytes  int64
	SHA256 string // hex digest of the bytes received
}

// Download streams the file at path on the host into w, hashing what
// arrives, so a large file is never held in memory and the caller can
// compare the digest with the one the host computed. It reads the file with
// cat as the executor's user (through sudo where the executor uses it), the
// user that wrote it.
func Download(ctx context.Context, ex Executor, path string, w io.Writer) (DownloadResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h), stop: cancel}
	_, err := ex.Run(ctx, Command{Args: []string{"cat", "--", path}, Stdout: cw})
	if cw.err != nil {
		return DownloadResult{Bytes: cw.n}, fmt.Errorf("download %s from %s: %w", path, ex, cw.err)
	}
	if err != nil {
		return DownloadResult{Bytes: cw.n}, fmt.Errorf("download %s from %s: %w", path, ex, err)
	}
	return DownloadResult{Bytes: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// countWriter counts what it passes on. On the first write error it keeps
// the error, stops the command and swallows the rest: an error returned to
// the session's copier would leave the remote side blocked on a full
// channel instead of ending.
type countWriter struct {
	w    io.Writer
	n    int64
	err  error
	stop func()
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
		c.stop()
	}
	return len(p), nil
}
