package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
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
