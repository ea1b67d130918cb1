package main

// Test helpers that more than one test file uses.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// runCapture runs the runner's command line args in this process and
// returns its exit code, stdout and stderr.
func runCapture(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// fakeBin makes a directory with the executables the validation looks for
// (it checks they exist, not what they do; nothing runs).
func fakeBin(t *testing.T, progs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range progs {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeSamples writes text into dir/name and returns its path.
func writeSamples(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMain lets this test binary be pgbench-runner itself when it is run by
// that name (runnerOnPath links it so): the same main, signal handling and
// exit codes, for the tests that need a process of their own (signals,
// shell completion), without building one.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "pgbench-runner" {
		main()
	}
	os.Exit(m.Run())
}

// runnerOnPath returns pgbench-runner (this test binary by that name, see
// TestMain) in a directory of its own, and an environment whose PATH leads
// to it.
func runnerOnPath(t *testing.T) (string, []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pgbench-runner")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin, append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}
