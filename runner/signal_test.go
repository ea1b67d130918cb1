package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
)

// A signal stops the subcommand, which reports it through its own error
// path (the JSON error document) and cleans up, and then the runner exits
// with 128 plus the signal: 143 for SIGTERM, 130 for SIGINT, where a runner
// the signal killed would have no exit code at all. The subcommand is a
// report waiting for the host this test holds, so nothing else runs.
func TestSignalExitCodes(t *testing.T) {
	bin, env := runnerOnPath(t)
	lockDir := filepath.Join(t.TempDir(), "lock")
	t.Setenv(hostlock.DirEnv, lockDir)
	env = append(env, hostlock.DirEnv+"="+lockDir)
	l, err := hostlock.Acquire(context.Background(), hostlock.Holder{Who: "campaign /srv/c", Doing: "measuring", Mode: hostlock.Exclusive}, hostlock.Waiting{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, tt := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGTERM, exitTerminated}, {syscall.SIGINT, exitInterrupted}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "report", t.TempDir(), "--manifest", "--json")
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout = &out
			errPipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			guard := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
			defer guard.Stop()
			stderr := bufio.NewReader(errPipe)
			line, err := stderr.ReadString('\n')
			if !strings.HasPrefix(line, "waiting for the host: campaign /srv/c measuring") {
				t.Fatalf("first stderr line = %q (%v), want the runner waiting for the host", line, err)
			}
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(stderr)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tt.want {
				t.Fatalf("exit code after %s = %d (%v), want %d; stderr %s", tt.sig, code, cmd.ProcessState, tt.want, rest)
			}
			var doc errorDoc
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Error.Kind != "interrupted" {
				t.Errorf("stdout = %q (%v), want a JSON error document of kind interrupted", out.String(), err)
			}
		})
	}
}
