// Package remote runs commands and uploads files on a benchmark host, either
// over SSH or on the machine the caller runs on. Every host-side operation of
// the provider goes through an Executor.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Executor runs commands and writes files on one host.
type Executor interface {
	// Run runs cmd and waits for it. A command that ran and exited non-zero
	// returns its Result together with an *ExitError; a command that could
	// not be started at all returns a *StartError. When ctx is cancelled the
	// whole process group of the command is killed on the host.
	Run(ctx context.Context, cmd Command) (Result, error)

	// Upload writes the content of r to path on the host with the given
	// mode, then verifies the written file by sha256. When the file already
	// has the expected hash the transfer is skipped.
	Upload(ctx context.Context, r io.Reader, path string, mode fs.FileMode) (UploadResult, error)

	// String describes the host for messages, e.g. "ssh root@10.200.1.2:22".
	String() string

	// Close releases the connection, if any.
	Close() error
}

// Command is one program invocation. Args[0] is the program; every element
// reaches the host as exactly one argument (see Quote).
type Command struct {
	Args []string
	// Env is added to the command's environment.
	Env map[string]string
	// Stdin, when set, is copied to the command's standard input.
	Stdin io.Reader
	// OnStdout and OnStderr, when set, receive each output line (without its
	// newline) as soon as it is complete, while the command runs. The full
	// output is still returned in Result.
	OnStdout func(line string)
	OnStderr func(line string)
	// Stdout, when set, receives the command's standard output as raw
	// bytes, as it arrives, instead of OnStdout and Result.Stdout: for
	// output that is data, not lines (a file being downloaded).
	Stdout io.Writer
	// Dir is the working directory; empty means the user's home (SSH) or the
	// current directory (local).
	Dir string
	// KillGrace is how long a cancelled command gets between SIGTERM and
	// SIGKILL; zero means DefaultKillGrace. Commands that stop servers on
	// SIGTERM (pgbench-runner ab) need far longer than the default.
	KillGrace time.Duration
	// OnStart, when set, gets the process id of the command once it has
	// started. Local commands only: over SSH the remote pid is not known.
	OnStart func(pid int)
}

// DefaultKillGrace is the SIGTERM-to-SIGKILL grace of a cancelled command.
const DefaultKillGrace = 2 * time.Second

func (c Command) killGrace() time.Duration {
	if c.KillGrace > 0 {
		return c.KillGrace
	}
	return DefaultKillGrace
}

// String renders the command as a shell would receive it.
func (c Command) String() string { return QuoteArgs(c.Args) }

// Result is what a finished command produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	Duration time.Duration
	// UserTime and SystemTime are the CPU time the command's process used
	// (its rusage: all its threads, and the children it waited for). Local
	// commands only; zero over SSH.
	UserTime, SystemTime time.Duration
}

// UploadResult reports what Upload did.
type UploadResult struct {
	SHA256  string // hex digest of the file on the host
	Bytes   int64
	Skipped bool // the host already had a file with that digest
}

// ExitError is returned when a command ran and exited with a non-zero status
// (or was killed by a signal, in which case ExitCode is -1 and Signal is set).
type ExitError struct {
	Command  string
	ExitCode int
	Signal   string
	Stderr   string // the tail of stderr, for messages
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited with status %d", e.Command, e.ExitCode)
	if e.Signal != "" {
		msg = fmt.Sprintf("%s killed by signal %s", e.Command, e.Signal)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// StartError is returned when a command could not be started: the program
// does not exist, the connection failed, the session could not be opened.
type StartError struct {
	Command string
	Err     error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Command, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// IsExit reports whether err means the command ran and exited non-zero, and
// returns its exit code.
func IsExit(err error) (int, bool) {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode, true
	}
	return 0, false
}

// stderrTail returns at most the last n bytes of b, on a line boundary where
// possible, for error messages.
func stderrTail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return "..." + string(b)
}
