package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// fakeBuild makes a prefix that looks like a finished build with key.
func fakeBuild(t *testing.T, key string) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "pg")
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	stamp, _ := json.Marshal(pgbuild.Result{BuildKey: key, Prefix: prefix})
	if err := os.WriteFile(filepath.Join(prefix, pgbuild.StampName), stamp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefix+".log", []byte("log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return prefix
}

func TestBuildRemove(t *testing.T) {
	prefix := fakeBuild(t, "abc")
	code, out, _ := runCapture(t, "build", "--remove", "--prefix", prefix, "--build-key", "abc", "--json")
	if code != exitOK {
		t.Fatalf("exit = %d, want %d; out %s", code, exitOK, out)
	}
	var r removed
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	if !r.Removed || r.BuildKey != "abc" {
		t.Errorf("removed = %+v, want removed build abc", r)
	}
	for _, p := range []string{prefix, prefix + ".log", prefix + ".lock"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after remove: stat err = %v, want not exist", p, err)
		}
	}
	// Again: nothing there, still success.
	code, out, _ = runCapture(t, "build", "--remove", "--prefix", prefix, "--json")
	if code != exitOK || !strings.Contains(out, `"removed": false`) && !strings.Contains(out, `"removed":false`) {
		t.Errorf("second remove: exit %d, out %s; want exit 0 and removed false", code, out)
	}
}

func TestBuildRemoveRefuses(t *testing.T) {
	notBuilt := t.TempDir()
	if err := os.WriteFile(filepath.Join(notBuilt, "postgres"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	otherKey := fakeBuild(t, "abc")
	tests := []struct {
		name, prefix, key, want string
	}{
		{"no stamp", notBuilt, "", "no build stamp"},
		{"other key", otherKey, "def", "holds build abc, not def"},
		{"top level", "/usr", "", "top-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"build", "--remove", "--prefix", tt.prefix, "--json"}
			if tt.key != "" {
				args = append(args, "--build-key", tt.key)
			}
			code, out, _ := runCapture(t, args...)
			if code != exitFailure {
				t.Fatalf("exit = %d, want %d; out %s", code, exitFailure, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("out = %s, want it to say %q", out, tt.want)
			}
			if _, err := os.Stat(tt.prefix); err != nil {
				t.Errorf("%s after refused remove: %v, want it kept", tt.prefix, err)
			}
		})
	}
	if code, _, _ := runCapture(t, "build", "--remove", "--json"); code != exitUsage {
		t.Errorf("--remove without --prefix: exit = %d, want %d", code, exitUsage)
	}
}

// A build that holds its prefix's lock keeps its prefix: remove refuses
// at once, and succeeds once the build lets go.
func TestBuildRemoveRefusesWhileBuildHoldsLock(t *testing.T) {
	prefix := fakeBuild(t, "abc")
	lock, err := pgbuild.LockPrefix(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCapture(t, "build", "--remove", "--prefix", prefix, "--json")
	if code != exitFailure || !strings.Contains(out, "a build holds") {
		t.Fatalf("remove while locked: exit %d, out %s; want exit %d saying a build holds the lock", code, out, exitFailure)
	}
	if _, err := os.Stat(filepath.Join(prefix, pgbuild.StampName)); err != nil {
		t.Fatalf("stamp after refused remove: %v, want it kept", err)
	}
	lock.Close()
	if code, out, _ := runCapture(t, "build", "--remove", "--prefix", prefix, "--json"); code != exitOK {
		t.Fatalf("remove after unlock: exit %d, out %s; want %d", code, out, exitOK)
	}
	if _, err := os.Stat(prefix); !os.IsNotExist(err) {
		t.Errorf("%s after remove: stat err = %v, want not exist", prefix, err)
	}
}
