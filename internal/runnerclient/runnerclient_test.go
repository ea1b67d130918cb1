package runnerclient

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// fakeRunner writes a shell script standing in for pgbench-runner.
func fakeRunner(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), BinaryName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunDecodesDocumentAndPassesJSONFlag(t *testing.T) {
	p := fakeRunner(t, `printf '{"args": "%s"}' "$*"`)
	var out struct {
		Args string `json:"args"`
	}
	if err := New(remote.NewLocal(), p).Run(context.Background(), &out, "tune", "revert", "--state", "a b"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "tune revert --state a b --json"; out.Args != want {
		t.Errorf("runner got args %q, want %q", out.Args, want)
	}
}

func TestRunErrorDocument(t *testing.T) {
	p := fakeRunner(t, `echo '{"error": {"message": "no huge pages", "kind": "unmet"}}'; echo "error: no huge pages" >&2; exit 3`)
	err := New(remote.NewLocal(), p).Run(context.Background(), nil, "hugepages", "reserve")
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("Run error = %v (%T), want *Error", err, err)
	}
	want := &Error{Args: []string{"hugepages", "reserve"}, Kind: KindUnmet, Message: "no huge pages", ExitCode: 3}
	if !reflect.DeepEqual(re, want) {
		t.Errorf("error = %+v, want %+v", re, want)
	}
	if got := re.Error(); got != "pgbench-runner hugepages reserve: no huge pages" {
		t.Errorf("message = %q", got)
	}
}

func TestRunExitWithoutDocument(t *testing.T) {
	p := fakeRunner(t, `echo "segfault" >&2; exit 1`)
	err := New(remote.NewLocal(), p).Run(context.Background(), nil, "sysinfo")
	var re *Error
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "segfault") {
		t.Fatalf("Run error = %v, want a plain error carrying stderr", err)
	}
	if _, exited := remote.IsExit(err); !exited {
		t.Errorf("error %v does not wrap the exit error", err)
	}
}

func TestRunNonJSONStdout(t *testing.T) {
	p := fakeRunner(t, `echo hello`)
	var out map[string]any
	err := New(remote.NewLocal(), p).Run(context.Background(), &out, "version")
	var oe *OutputError
	if !errors.As(err, &oe) || strings.TrimSpace(string(oe.Stdout)) != "hello" {
		t.Fatalf("Run error = %v, want an *OutputError holding the output", err)
	}
	// Without a document to decode, the output is not looked at.
	if err := New(remote.NewLocal(), p).Run(context.Background(), nil, "version"); err != nil {
		t.Errorf("Run with out = nil: %v, want nil", err)
	}
}

func TestRunNotInstalled(t *testing.T) {
	p := filepath.Join(t.TempDir(), BinaryName)
	err := New(remote.NewLocal(), p).Run(context.Background(), nil, "uninstall")
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Run of a missing runner = %v, want ErrNotInstalled", err)
	}
}

func TestRunEvents(t *testing.T) {
	p := fakeRunner(t, `echo '{"event":"phase","message":"loading a"}' >&2
echo 'plain text' >&2
echo '{"event":"run_done","seq":3,"total":8,"variant":"b","clients":16,"iteration":2,"tps":1234.5}' >&2
echo '{"not":"an event"}' >&2
echo '{}'`)
	var events []campaign.Event
	var lines []string
	c := New(remote.NewLocal(), p)
	c.OnEvent = func(e campaign.Event) { events = append(events, e) }
	c.OnStderr = func(l string) { lines = append(lines, l) }
	if err := c.Run(context.Background(), nil, "ab", "--progress-json"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	tps := 1234.5
	want := []campaign.Event{
		{Event: campaign.EventPhase, Message: "loading a"},
		{Event: campaign.EventRunDone, Seq: 3, Total: 8, Variant: "b", Clients: 16, Iteration: 2, TPS: &tps},
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events = %+v, want %+v", events, want)
	}
	if want := []string{"plain text", `{"not":"an event"}`}; !reflect.DeepEqual(lines, want) {
		t.Errorf("other stderr lines = %q, want %q", lines, want)
	}

	// Without OnEvent every line is a plain line.
	lines = nil
	c.OnEvent = nil
	c.Run(context.Background(), nil, "ab")
	if len(lines) != 4 {
		t.Errorf("stderr lines without OnEvent = %q, want all 4", lines)
	}
}

// The real runner's error document decodes into the same type.
func TestRunRealRunnerUsageError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner")
	}
	bin := filepath.Join(t.TempDir(), BinaryName)
	// -trimpath and CGO_ENABLED=0 as make runner builds it: the compiled
	// packages come from the build cache that build filled.
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "../../runner")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build runner: %v\n%s", err, b)
	}
	err := New(remote.NewLocal(), bin).Run(context.Background(), nil, "tune", "revert")
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindUsage || re.ExitCode != 2 || !strings.Contains(re.Message, "--state") {
		t.Fatalf("tune revert without --state: %v, want a usage *Error with exit code 2 naming --state", err)
	}
}
