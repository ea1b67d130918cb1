package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestBuildSystemJSON(t *testing.T) {
	bin := "/usr/lib/postgresql/15/bin"
	testhost.RequireCommand(t, "pg_config", bin)
	code, out, errOut := runCapture(t, "build", "--system", bin, "--json")
	if code != 0 {
		t.Fatalf("exit = %d, want 0; stderr %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	for _, k := range []string{"build_key", "prefix", "bin_dir", "version", "configure_args", "source", "patches", "seconds", "cached", "log_path"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, out)
		}
	}
	if got, want := r["bin_dir"], bin; got != want {
		t.Errorf("bin_dir = %v, want %v", got, want)
	}
	src, _ := r["source"].(map[string]any)
	if got, want := src["kind"], "system"; got != want {
		t.Errorf("source.kind = %v, want %v", got, want)
	}
	if v, _ := r["version"].(string); !strings.HasPrefix(v, "15.") {
		t.Errorf("version = %q, want 15.x", v)
	}
}

func TestBuildUsage(t *testing.T) {
	tests := [][]string{
		{"build"},
		{"build", "--system", "/usr/bin", "--wait-host", "-1s"},
		{"build", "--system", "/usr/bin", "--wait-host", "soon"},
		{"build", "--tarball", "a.tar.bz2", "--system", "/usr/bin"},
		{"build", "--git", "https://example.invalid/pg.git"},
		{"build", "--system", "/usr/bin", "--patch", "x.patch"},
	}
	for _, args := range tests {
		if code, _, _ := runCapture(t, append(args, "--json")...); code != exitUsage {
			t.Errorf("%v: exit = %d, want %d", args, code, exitUsage)
		}
	}
}

func TestBuildBadPatchCLI(t *testing.T) {
	tb := pgbuildtest.Tarball(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "nope.patch")
	patch := "--- a/no/such/file.c\n+++ b/no/such/file.c\n@@ -1,1 +1,1 @@\n-old\n+new\n"
	if err := os.WriteFile(bad, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "pg")
	code, out, _ := runCapture(t, "build", "--tarball", tb, "--patch", bad, "--prefix", prefix, "--json")
	if code != exitFailure {
		t.Fatalf("exit = %d, want %d; out %s", code, exitFailure, out)
	}
	var doc struct {
		Error struct{ Message, Kind string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	if !strings.Contains(doc.Error.Message, "nope.patch") {
		t.Errorf("error message %q does not name the patch", doc.Error.Message)
	}
	if _, err := os.Stat(prefix); !os.IsNotExist(err) {
		t.Errorf("prefix after failed patch: stat err = %v, want not exist", err)
	}
}

// A build under a measurement waits for the host, says so on stderr, and
// with --wait-host gives up after that long, naming the measurement; it
// compiles nothing meanwhile.
func TestBuildWaitsForTheHost(t *testing.T) {
	tb := pgbuildtest.Tarball(t)
	dir := filepath.Join(t.TempDir(), "lock")
	t.Setenv(hostlock.DirEnv, dir)
	l, err := hostlock.Acquire(context.Background(), hostlock.Holder{Who: "campaign /srv/c", Doing: "measuring", Mode: hostlock.Exclusive}, hostlock.Waiting{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	hs, err := hostlock.Holders(dir)
	if err != nil || len(hs) != 1 {
		t.Fatalf("holders = %+v, %v; want the one taken", hs, err)
	}
	prefix := filepath.Join(t.TempDir(), "pg")
	code, out, errOut := runCapture(t, "build", "--tarball", tb, "--prefix", prefix, "--wait-host", "2s", "--json")
	if code != exitFailure {
		t.Fatalf("exit = %d, want %d; out %s", code, exitFailure, out)
	}
	if want := fmt.Sprintf("waiting for the host: campaign /srv/c measuring since %s (pid %d), 0s so far\n", hs[0].Since.Format("15:04:05Z"), os.Getpid()); !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr = %q, want it to start with %q", errOut, want)
	}
	var doc struct {
		Error struct{ Message, Kind string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	if m := doc.Error.Message; !strings.Contains(m, "gave up waiting for the host after 2s, held by campaign /srv/c measuring since") || !strings.Contains(m, "waited the longest allowed, 2s") {
		t.Errorf("error message = %q, want the wait, the holder and the limit", m)
	}
	if _, err := os.Stat(prefix + ".log"); !os.IsNotExist(err) {
		t.Errorf("build log: stat err = %v, want no build started", err)
	}
}
