// Package statefile reads and writes the small JSON records in which runner
// subcommands keep what they changed on a host, so a later call can undo it.
package statefile

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// Write stores v as indented JSON at path, readable by its owner only,
// atomically: a crash leaves either the old record or the new one, never
// half of one.
func Write(path string, v any) error {
	if err := atomicfile.WriteJSON(path, v, 0o600); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// Read decodes the record at path into v.
func Read(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse state %s: %w", path, err)
	}
	return nil
}
