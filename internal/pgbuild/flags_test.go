package pgbuild

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// decodeFlags parses args with the build flags alone.
func decodeFlags(t *testing.T, args []string, ccache bool) Options {
	t.Helper()
	var o Options
	fs := pflag.NewFlagSet("build", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := BindFlags(fs, &o, ccache)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	f.Finish()
	return o
}

func TestFlagArgsRoundTrip(t *testing.T) {
	for _, o := range []Options{
		{},
		{CCacheDir: DefaultCCacheDir},
		{Patches: []string{"/p/a.patch", "/p/b c.patch"}, ConfigureFlags: []string{"--with-libnuma", "--without-icu"},
			CFlags: "-O2 -g -fno-omit-frame-pointer", Jobs: 3, InstallDeps: true, CCacheDir: "/srv/cc,x"},
	} {
		args := o.FlagArgs()
		got := decodeFlags(t, args, false)
		if !reflect.DeepEqual(got, o) {
			t.Errorf("decode(%q) = %+v, want %+v", args, got, o)
		}
	}
}

func TestFlagsDefaultsAndProfiling(t *testing.T) {
	if got := decodeFlags(t, nil, true).CCacheDir; got != DefaultCCacheDir {
		t.Errorf("--ccache on by default: CCacheDir = %q, want %q", got, DefaultCCacheDir)
	}
	if got := decodeFlags(t, []string{"--ccache=false"}, true).CCacheDir; got != "" {
		t.Errorf("--ccache=false: CCacheDir = %q, want none", got)
	}
	if got := decodeFlags(t, nil, false).CCacheDir; got != "" {
		t.Errorf("--ccache off by default: CCacheDir = %q, want none", got)
	}
	if got, want := decodeFlags(t, []string{"--profiling"}, false).CFlags, "-O2 "+FramePointerFlags; got != want {
		t.Errorf("--profiling: CFlags = %q, want %q", got, want)
	}
}

// ccacheEnv puts links named after the compilers ahead on PATH, each to
// ccache, and keeps the work directory out of what ccache hashes.
func TestCCacheEnv(t *testing.T) {
	bin := t.TempDir()
	for _, p := range []string{"ccache", "gcc", "cc"} {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	work, cache := t.TempDir(), filepath.Join(t.TempDir(), "cache")
	env, err := ccacheEnv(cache, work, work)
	if err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(work, "ccache-bin")
	want := []string{"PATH=" + links + ":" + bin, "CCACHE_DIR=" + cache, "CCACHE_BASEDIR=" + work, "CCACHE_NOHASHDIR=1"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	for _, cc := range []string{"gcc", "cc"} {
		if got, err := os.Readlink(filepath.Join(links, cc)); err != nil || got != filepath.Join(bin, "ccache") {
			t.Errorf("link %s -> %q, %v; want %s", cc, got, err, filepath.Join(bin, "ccache"))
		}
	}
	if _, err := os.Lstat(filepath.Join(links, "clang")); !os.IsNotExist(err) {
		t.Errorf("a link for clang, which is not installed: %v", err)
	}
	if fi, err := os.Stat(cache); err != nil || !fi.IsDir() {
		t.Errorf("cache directory: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := ccacheEnv(cache, t.TempDir(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "ccache") {
		t.Errorf("without ccache: err = %v, want one naming ccache", err)
	}
	if got := requiredTools(Options{GitURL: "/r", CCacheDir: cache}); !slices.Contains(got, "ccache") || !slices.Contains(got, "git") {
		t.Errorf("required tools = %q, want git and ccache among them", got)
	}
}
