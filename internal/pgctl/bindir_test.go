package pgctl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCheckBinDir(t *testing.T) {
	dir := t.TempDir()
	for _, p := range BinDirPrograms {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckBinDir(dir); err != nil {
		t.Fatalf("CheckBinDir(complete) = %v, want nil", err)
	}
	os.Remove(filepath.Join(dir, "psql"))
	os.Chmod(filepath.Join(dir, "pgbench"), 0o644)
	os.Remove(filepath.Join(dir, "initdb"))
	os.Mkdir(filepath.Join(dir, "initdb"), 0o755)
	err := CheckBinDir(dir)
	var me *MissingProgramsError
	if !errors.As(err, &me) {
		t.Fatalf("CheckBinDir = %v, want a *MissingProgramsError", err)
	}
	if got, want := me.Missing, []string{"initdb", "pgbench", "psql"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing = %q, want %q", got, want)
	}
	if got, want := err.Error(), "bin dir "+dir+" has no initdb, pgbench, psql executables"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}
