package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBuildAdoptWithoutPsql adopts a bin directory that has the server and
// pgbench but no psql: a campaign needs psql, so adopting must fail then,
// not when the campaign starts.
func TestBuildAdoptWithoutPsql(t *testing.T) {
	bin := fakeBin(t, "postgres", "initdb", "pg_ctl", "pgbench", "pg_config")
	code, stdout, _ := runCapture(t, "build", "--system", bin, "--json")
	if code != exitUnmet {
		t.Fatalf("exit code = %d, want %d; stdout %s", code, exitUnmet, stdout)
	}
	var doc errorDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not a JSON error document: %v\n%s", err, stdout)
	}
	if want := "bin dir " + bin + " has no psql executable"; !strings.Contains(doc.Error.Message, want) {
		t.Errorf("error = %q, want it to contain %q", doc.Error.Message, want)
	}
}
