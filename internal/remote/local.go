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

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
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
	name := c.String()
	if len(c.Args) == 0 {
		return Result{}, &StartError{Command: name, Err: errors.New("empty command")}
	}
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdin = c.Stdin
	stdout := &lineWriter{fn: c.OnStdout}
	stderr := &lineWriter{fn: c.OnStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Own process group so the whole tree can be signalled; Pdeathsig so a
	// crash of this process does not leave the command running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Grandchildren holding the pipes open must not make Wait hang forever.
	cmd.WaitDelay = c.killGrace() + time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, &StartError{Command: name, Err: err}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			pgid := cmd.Process.Pid
			syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(c.killGrace()):
			}
			// The leader may be gone while others in the group survive.
			syscall.Kill(-pgid, syscall.SIGKILL)
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	res := Result{Stdout: stdout.finish(), Stderr: stderr.finish(), Duration: time.Since(start)}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
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
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return res, fmt.Errorf("create temp file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return res, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return res, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return res, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return res, fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return res, fmt.Errorf("rename %s to %s: %w", tmp, path, err)
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
