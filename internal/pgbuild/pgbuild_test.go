package pgbuild

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// testPatch changes the boot value of bgwriter_delay from 200 to 250 ms;
// initdb leaves it commented out, so `postgres -C` shows the boot value.
const testPatch = "testdata/bgwriter-delay.patch"

var testFlags = []string{"--without-readline", "--without-icu"}

// The build key changes with every input a build depends on, and only then.
func TestKeyChanges(t *testing.T) {
	patch, err := os.ReadFile(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	base := func() keyInputs {
		return keyInputs{"tarball:" + strings.Repeat("a", 64), [][]byte{patch}, append([]string(nil), testFlags...), "", "cc (Debian 12.2.0-14) 12.2.0"}
	}
	baseKey := base().key()
	if again := base().key(); again != baseKey {
		t.Fatalf("same inputs: key %s, want %s", again, baseKey)
	}
	changed := func(name string, change func(*keyInputs)) {
		t.Helper()
		k := base()
		change(&k)
		if got := k.key(); got == baseKey {
			t.Errorf("%s: key unchanged %s", name, got)
		}
	}
	changed("extra configure flag", func(k *keyInputs) { k.flags = append(k.flags, "--with-libnuma") })
	changed("cflags", func(k *keyInputs) { k.cflags = "-O3" })
	changed("one patch byte", func(k *keyInputs) {
		k.patches = [][]byte{[]byte(strings.Replace(string(patch), "250, 10", "251, 10", 1))}
	})
	changed("no patch", func(k *keyInputs) { k.patches = nil })
	changed("other source", func(k *keyInputs) { k.sourceID = "git:" + strings.Repeat("b", 40) })
	changed("other compiler", func(k *keyInputs) { k.compiler = "clang version 16.0.6" })
	// Fields are length-prefixed: moving a boundary is a different key.
	changed("flags split differently", func(k *keyInputs) {
		k.flags = []string{strings.Join(testFlags, "")}
	})
}

// Planning makes the patch and tarball paths absolute in its own options,
// never in the caller's slice.
func TestPlanLeavesCallerPatches(t *testing.T) {
	for _, tool := range requiredTools(Options{}) {
		testhost.RequireCommand(t, tool)
	}
	dir := t.TempDir()
	tb := filepath.Join(dir, "src.tar")
	if err := os.WriteFile(tb, []byte("not built, only hashed"), 0o644); err != nil {
		t.Fatal(err)
	}
	patches := []string{testPatch}
	opts := Options{Tarball: tb, Patches: patches, Prefix: filepath.Join(dir, "pg")}
	p, err := newPlan(context.Background(), opts, func(string, string) {})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	defer p.discard()
	if got, want := patches[0], testPatch; got != want {
		t.Errorf("caller's patches[0] = %q after planning, want %q", got, want)
	}
	want, err := filepath.Abs(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.opts.Patches; len(got) != 1 || got[0] != want {
		t.Errorf("planned patches = %q, want [%q]", got, want)
	}
	if len(p.patches) != 1 || p.patches[0].Name != "bgwriter-delay.patch" {
		t.Errorf("patch infos = %+v, want bgwriter-delay.patch", p.patches)
	}
	if got, want := p.src.Kind, "tarball"; got != want {
		t.Errorf("source kind = %q, want %q", got, want)
	}
}

func TestAdoptSystem(t *testing.T) {
	bin := "/usr/lib/postgresql/15/bin"
	testhost.RequireCommand(t, "pg_config", bin)
	r, err := Build(context.Background(), Options{SystemBinDir: bin}, nil)
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if got, want := r.Source.Kind, "system"; got != want {
		t.Errorf("source kind = %q, want %q", got, want)
	}
	if got, want := r.BinDir, bin; got != want {
		t.Errorf("bin_dir = %q, want %q", got, want)
	}
	if !strings.HasPrefix(r.Version, "15.") {
		t.Errorf("version = %q, want 15.x", r.Version)
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		t.Errorf("adopted server gone: %v", err)
	}
	if _, err := Build(context.Background(), Options{SystemBinDir: t.TempDir()}, nil); err == nil {
		t.Errorf("adopt empty dir: err = nil, want an error")
	}
}

func TestMissingTools(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := checkTools(Options{Tarball: "x.tar.bz2"})
	var me *MissingToolsError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want MissingToolsError", err)
	}
	for _, want := range []string{"cc", "make", "flex", "bison", "patch", "bzip2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestLockExcludes(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "pg")
	lock, err := LockPrefix(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := LockPrefix(ctx, prefix); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: err = %v, want deadline exceeded", err)
	}
	if _, err := TryLockPrefix(prefix); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("try while held: err = %v, want filelock.ErrHeld", err)
	}
	lock.Close()
	again, err := TryLockPrefix(prefix)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again.Close()
}

func TestGitFetchRecordsCommit(t *testing.T) {
	testhost.RequireCommand(t, "git")
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "configure"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "configure")
	git(repo, "commit", "-q", "-m", "one")
	want := git(repo, "rev-parse", "HEAD")
	git(repo, "tag", "v1")
	if err := os.WriteFile(filepath.Join(repo, "later"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "later")
	git(repo, "commit", "-q", "-m", "two")

	dir := t.TempDir()
	got, err := gitFetch(context.Background(), dir, "file://"+repo, "v1", func(string, string) {})
	if err != nil {
		t.Fatalf("gitFetch: %v", err)
	}
	if got != want {
		t.Fatalf("commit = %s, want %s (tag v1)", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "later")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file from a later commit present: stat err = %v", err)
	}
	if _, err := gitFetch(context.Background(), t.TempDir(), "file://"+repo, "no-such-ref", func(string, string) {}); err == nil {
		t.Errorf("fetch of a missing ref: err = nil, want an error")
	}
}

// A build started from a make target inherits MAKELEVEL and MAKEFLAGS;
// PostgreSQL's makefiles skip generating headers then, so they must not
// reach the build.
func TestBuildEnvironDropsEnclosingMake(t *testing.T) {
	t.Setenv("MAKELEVEL", "1")
	t.Setenv("MAKEFLAGS", "w -j2")
	t.Setenv("PGBUILD_KEEP_ME", "yes")
	env := strings.Join(buildEnviron(), "\n")
	for _, gone := range []string{"MAKELEVEL=", "MAKEFLAGS="} {
		if strings.Contains(env, gone) {
			t.Errorf("build environment has %s..., want it dropped", gone)
		}
	}
	if !strings.Contains(env, "PGBUILD_KEEP_ME=yes") {
		t.Errorf("build environment lost an ordinary variable")
	}
}

// A bin dir names its build only through the stamp of its prefix: a stamp
// for another bin dir, a broken stamp or none give no key.
func TestStampedBuildKey(t *testing.T) {
	root := t.TempDir()
	stamp := func(prefix, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(prefix, StampName), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(prefix, "bin")
	}
	built := filepath.Join(root, "built")
	good := stamp(built, `{"build_key":"0123abcd","prefix":"`+built+`","bin_dir":"`+built+`/bin"}`)
	moved := stamp(filepath.Join(root, "moved"), `{"build_key":"0123abcd","bin_dir":"/elsewhere/bin"}`)
	broken := stamp(filepath.Join(root, "broken"), `{"build_key":`)
	none := stamp(filepath.Join(root, "none"), "")
	tests := []struct {
		binDir, want string
	}{
		{good, "0123abcd"},
		{good + "/", "0123abcd"},
		{built, ""},
		{moved, ""},
		{broken, ""},
		{none, ""},
		{filepath.Join(root, "missing", "bin"), ""},
	}
	for _, tt := range tests {
		if got := StampedBuildKey(tt.binDir); got != tt.want {
			t.Errorf("StampedBuildKey(%s) = %q, want %q", tt.binDir, got, tt.want)
		}
	}
}
