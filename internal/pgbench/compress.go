package pgbench

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// gzSuffix ends the name of a compressed per-transaction log.
const gzSuffix = ".gz"

// CompressLogs replaces each plain log file in files with a gzip copy
// (NAME.gz), written to a temporary name and renamed before the plain file
// goes, so an interruption leaves one complete copy or the other. It
// returns the bytes before and after.
func CompressLogs(files []string) (before, after int64, err error) {
	for _, name := range files {
		if strings.HasSuffix(name, gzSuffix) {
			continue
		}
		b, a, err := compressFile(name)
		if err != nil {
			return before, after, err
		}
		before += b
		after += a
	}
	return before, after, nil
}

func compressFile(name string) (before, after int64, err error) {
	in, err := os.Open(name)
	if err != nil {
		return 0, 0, fmt.Errorf("compress pgbench log: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("compress pgbench log: %w", err)
	}
	gz := name + gzSuffix
	err = atomicfile.Write(gz, 0o644, func(w io.Writer) error {
		// BestSpeed: the next run waits for this, and per-transaction lines
		// compress about as well at level 1 as at the default.
		zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			return err
		}
		if _, err := io.Copy(zw, in); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("compress pgbench log %s: %w", name, err)
	}
	gst, err := os.Stat(gz)
	if err != nil {
		return 0, 0, fmt.Errorf("compress pgbench log: %w", err)
	}
	if err := os.Remove(name); err != nil {
		return 0, 0, fmt.Errorf("compress pgbench log: %w", err)
	}
	return st.Size(), gst.Size(), nil
}

// openLog opens a per-transaction log, plain or compressed.
func openLog(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil || !strings.HasSuffix(name, gzSuffix) {
		return f, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return gzReadCloser{zr, f}, nil
}

type gzReadCloser struct {
	*gzip.Reader
	f *os.File
}

func (g gzReadCloser) Close() error {
	g.Reader.Close()
	return g.f.Close()
}
