// Package atomicfile replaces files so that a crash or an error leaves
// either the old content or the new, never a mix: the new content goes to
// a temporary file in the same directory, which is synced, given its mode
// and renamed over the target, and then the directory is synced so the
// rename itself survives a power loss.
package atomicfile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with what write produces, with permissions mode.
// On any error before the rename the old file is untouched and the
// temporary file is removed.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	if err := replace(path, mode, write); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFile replaces path with data, with permissions mode.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return Write(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON replaces path with v as indented JSON and a final newline,
// with permissions mode. A value that cannot be encoded is an error and
// leaves path as it was.
func WriteJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'), mode)
}

// replace writes a temporary file beside path and renames it over path;
// on an error it removes the temporary file.
func replace(path string, mode os.FileMode, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// Chmod on the descriptor, unlike the mode given at creation, is not
	// narrowed by the umask.
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// SyncDir makes the renames into dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
