package pgctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinDirPrograms are the programs a PostgreSQL bin directory must hold for
// pgbench-runner to use it: a campaign runs every one of them (psql for
// CHECKPOINT and SHOW), so a build or an adopted installation is checked
// against the same list before anything is measured.
var BinDirPrograms = []string{"postgres", "initdb", "pg_ctl", "pgbench", "psql"}

// MissingProgramsError is a bin directory that lacks some of BinDirPrograms.
type MissingProgramsError struct {
	Dir     string
	Missing []string
}

func (e *MissingProgramsError) Error() string {
	noun := "executable"
	if len(e.Missing) > 1 {
		noun += "s"
	}
	return fmt.Sprintf("bin dir %s has no %s %s", e.Dir, strings.Join(e.Missing, ", "), noun)
}

// CheckBinDir returns a *MissingProgramsError naming every program of
// BinDirPrograms that dir lacks as an executable file.
func CheckBinDir(dir string) error {
	var missing []string
	for _, prog := range BinDirPrograms {
		st, err := os.Stat(filepath.Join(dir, prog))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			missing = append(missing, prog)
		}
	}
	if len(missing) > 0 {
		return &MissingProgramsError{Dir: dir, Missing: missing}
	}
	return nil
}
