package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"no args prints usage to stderr", nil, exitUsage, "", "Subcommands:"},
		{"--help", []string{"--help"}, exitOK, "Exit codes:", ""},
		{"-h", []string{"-h"}, exitOK, "Subcommands:", ""},
		{"help", []string{"help"}, exitOK, "Subcommands:", ""},
		{"help of an unknown subcommand", []string{"help", "frobnicate"}, exitUsage, "", `unknown subcommand "frobnicate"`},
		{"help of an unknown action", []string{"help", "history", "frobnicate"}, exitUsage, "", `history has no action "frobnicate"; it has: changes, import`},
		{"unknown subcommand", []string{"frobnicate"}, exitUsage, "", `unknown subcommand "frobnicate"`},
		{"version text", []string{"version"}, exitOK, "pgbench-runner " + version, ""},
		{"version flag", []string{"--version"}, exitOK, runtime.GOARCH, ""},
		{"bad flag", []string{"version", "--nope"}, exitUsage, "", "unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCapture(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, errs)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", out, tt.wantOut)
			}
			if !strings.Contains(errs, tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errs, tt.wantErr)
			}
		})
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, _ := runCapture(t, "version", "--json")
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0", code)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if v.Version != version || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Errorf("version --json = %+v, want version %s on %s/%s", v, version, runtime.GOOS, runtime.GOARCH)
	}
}

// With --json a failure is still one JSON document on stdout, carrying the
// message and its kind, and the exit code says which kind.
func TestJSONErrorDocument(t *testing.T) {
	code, out, _ := runCapture(t, "version", "--json", "extra")
	if code != exitUsage {
		t.Fatalf("exit code = %d, want %d", code, exitUsage)
	}
	var doc errorDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not a JSON error document: %v\n%s", err, out)
	}
	if doc.Error.Kind != "usage" || !strings.Contains(doc.Error.Message, `"extra"`) {
		t.Errorf("error document = %+v, want kind usage naming \"extra\"", doc.Error)
	}
}

// Every subcommand and action prints its help on stdout and exits 0, asked
// with --help, -h, or help CMD [ACTION]; its help lists --json.
func TestEveryCommandHasJSONAndHelp(t *testing.T) {
	for name, c := range commands {
		paths := [][]string{{name}}
		for _, a := range actionsOf(c) {
			paths = append(paths, []string{name, a})
		}
		for _, p := range paths {
			cmd := strings.Join(p, " ")
			t.Run(cmd, func(t *testing.T) {
				var first string
				for _, args := range [][]string{append(p, "--help"), append(p, "-h"), append([]string{"help"}, p...)} {
					code, out, errs := runCapture(t, args...)
					if code != exitOK || errs != "" {
						t.Errorf("%q: exit code %d, stderr %q; want 0 and nothing on stderr", args, code, errs)
					}
					if !strings.HasPrefix(out, "Usage: pgbench-runner "+name) || !strings.Contains(out, "--json") {
						t.Errorf("%q: stdout = %q, want the usage of %s with --json", args, out, name)
					}
					if first == "" {
						first = out
					} else if out != first {
						t.Errorf("%q printed\n%s\nbut %s --help printed\n%s", args, out, cmd, first)
					}
				}
			})
		}
	}
}

// A nested command's help is its own (hugepages actions: TestHugepagesForeignFlags).
func TestActionHelpIsTheAction(t *testing.T) {
	_, out, _ := runCapture(t, "history", "import", "--help")
	if !strings.HasPrefix(out, "Usage: pgbench-runner history import") || strings.Contains(out, "--baseline") {
		t.Errorf("history import --help = %q, want the usage of history import, without history's --baseline", out)
	}
}

// The JSON error kind and the exit code come from one classification, so
// they cannot disagree.
func TestErrorKindMatchesExitCode(t *testing.T) {
	tests := []struct {
		err      error
		kind     string
		wantCode int
	}{
		{usagef("bad --clients"), "usage", exitUsage},
		{unmet(errors.New("no numactl")), "unmet", exitUnmet},
		{fmt.Errorf("run pgbench: %w", context.Canceled), "interrupted", exitInterrupted},
		{errors.New("boom"), "failure", exitFailure},
	}
	for _, tt := range tests {
		if got := errorKind(tt.err); got != tt.kind {
			t.Errorf("errorKind(%v) = %q, want %q", tt.err, got, tt.kind)
		}
		if got := exitCode(context.Background(), tt.err); got != tt.wantCode {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.wantCode)
		}
	}
}
