package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
)

// localExecutor runs commands on the machine the caller runs on.
type localExecutor struct{}

// NewLocal returns an Executor for the local machine. Commands run directly
// (no shell), each in its own process group so that cancelling the context
// kills everything the command started.
func NewLocal() Executor { return localExecutor{} }

func (localExecutor) String() string { return "local" }
func (localExecutor) Close() error   { return nil }

func (localExecutor) Run(ctx context.Context, c Command) (Result, error) {
	return RunLocal(ctx, c, LocalOptions{})
}

// LocalOptions are what only a command run on this machine can have.
type LocalOptions struct {
	// Credential, when set, runs the command as that user and group
	// (PostgreSQL refuses to run as root).
	Credential *proc.Credential
	// Environ, when not nil, is the environment the command starts from
	// instead of this process's; Command.Env is added to it.
	Environ []string
}

// RunLocal runs c on this machine and waits for it, the way every local
// process of the runner runs: directly (no shell), in its own process group,
// killed with the caller if the caller dies, and on cancel the whole group
// gets SIGTERM and, after c's kill grace, SIGKILL, so nothing it started
// (sub-makes, compilers, backends) outlives the call. Errors are as
// Executor.Run documents: *StartError, *ExitError, or the context's error.
// A program that puts itself in a session of its own (the postmaster pg_ctl
// starts) is out of the group's reach by design.
func RunLocal(ctx context.Context, c Command, o LocalOptions) (Result, error) {
	name := c.String()
	if len(c.Args) == 0 {
		return Result{}, &StartError{Command: name, Err: errors.New("empty command")}
	}
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = o.Environ
	if len(c.Env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdin = c.Stdin
	stdout := &lineWriter{fn: c.OnStdout}
	stderr := &lineWriter{fn: c.OnStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	// Own process group so the whole tree can be signalled, and killed with
	// this process where the kernel can.
	proc.Start(cmd, o.Credential)
	// Grandchildren holding the pipes open must not make Wait hang forever.
	cmd.WaitDelay = c.killGrace() + time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, &StartError{Command: name, Err: err}
	}
	if c.OnStart != nil {
		c.OnStart(cmd.Process.Pid)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			pgid := cmd.Process.Pid
			proc.SignalGroup(pgid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(c.killGrace()):
			}
			// The leader may be gone while others in the group survive.
			proc.SignalGroup(pgid, syscall.SIGKILL)
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	res := Result{Stdout: stdout.finish(), Stderr: stderr.finish(), Duration: time.Since(start)}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		res.UserTime, res.SystemTime = cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return res, &StartError{Command: name, Err: werr}
		}
		e := &ExitError{Command: name, ExitCode: res.ExitCode, Stderr: stderrTail(res.Stderr, 2048)}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.ExitCode, e.Signal = -1, ws.Signal().String()
			res.ExitCode = -1
		}
		return res, e
	}
	return res, nil
}

// Upload reads all of r first: the digest must be known before the existing
// file can be compared, and the files we upload (binaries, configs) fit in
// memory comfortably.
func (localExecutor) Upload(ctx context.Context, r io.Reader, path string, mode fs.FileMode) (UploadResult, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return UploadResult{}, fmt.Errorf("read content for %s: %w", path, err)
	}
	want := digest.SHA256(data)
	res := UploadResult{SHA256: want, Bytes: int64(len(data))}
	if got, err := digest.FileSHA256(path); err == nil && got == want {
		if err := os.Chmod(path, mode); err != nil {
			return res, fmt.Errorf("chmod %s: %w", path, err)
		}
		res.Skipped = true
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("upload %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := atomicfile.WriteFile(path, data, mode); err != nil {
		return res, fmt.Errorf("upload: %w", err)
	}
	got, err := digest.FileSHA256(path)
	if err != nil {
		return res, fmt.Errorf("verify %s: %w", path, err)
	}
	if got != want {
		return res, fmt.Errorf("verify %s: sha256 is %s, want %s", path, got, want)
	}
	return res, nil
}
