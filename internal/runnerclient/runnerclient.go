// Package runnerclient invokes pgbench-runner on a host and holds the parts
// of its JSON contract that both sides share: the error document a failed
// subcommand prints, the layout of the install directory, and the result of
// uninstall. The runner writes these types; the provider reads them with
// Client.
package runnerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// BinaryName is the runner's file name in its install directory.
const BinaryName = "pgbench-runner"

// BinaryPath is where the runner lives in an install directory.
func BinaryPath(installDir string) string { return path.Join(installDir, BinaryName) }

// BisectBuildRoot is where pgbench_perf_bisect builds by default: beside
// the runner, apart from pgbench_postgres_build's builds, so that
// destroying a bisect never removes a build another resource uses.
func BisectBuildRoot(installDir string) string { return path.Join(installDir, "bisect-builds") }

// TuneStatePath is the tuning state file (previous values of the knobs
// pgbench_host tuned) in an install directory.
func TuneStatePath(installDir string) string { return path.Join(installDir, "tune-state.json") }

// The kinds of error document, one per exit code class of the runner.
const (
	KindUsage       = "usage"       // exit 2: bad invocation
	KindUnmet       = "unmet"       // exit 3: the host lacks a requirement
	KindInterrupted = "interrupted" // exit 130 (SIGINT) or 143 (SIGTERM)
	KindFailure     = "failure"     // exit 1
)

// ErrorDoc is the JSON document a subcommand run with --json prints on
// stdout instead of its result when it fails.
type ErrorDoc struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says why a subcommand failed.
type ErrorBody struct {
	Message string `json:"message"`
	Kind    string `json:"kind"`
}

// Error is a runner subcommand that failed and said why in its error
// document.
type Error struct {
	Args     []string
	Kind     string
	Message  string
	ExitCode int
}

func (e *Error) Error() string {
	return fmt.Sprintf("pgbench-runner %s: %s", strings.Join(e.Args, " "), e.Message)
}

// OutputError is a runner that succeeded but printed something that is not
// the JSON document asked for (an old runner, or not the runner at all).
type OutputError struct {
	Args   []string
	Stdout []byte
	Err    error
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("pgbench-runner %s printed output that is not its JSON document (%v): %.300s",
		strings.Join(e.Args, " "), e.Err, e.Stdout)
}

func (e *OutputError) Unwrap() error { return e.Err }

// ErrNotInstalled means the runner binary is not on the host (any more).
var ErrNotInstalled = errors.New("pgbench-runner is not installed there")

// Client runs one runner binary on one host. The zero hooks drop what they
// would receive; stderr is still in the errors.
type Client struct {
	Exec remote.Executor
	// Path is the runner's absolute path on the host.
	Path string
	// OnEvent receives each progress event (a --progress-json line on
	// stderr) as it arrives.
	OnEvent func(campaign.Event)
	// OnStderr receives every other stderr line.
	OnStderr func(line string)
	// KillGrace is the SIGTERM-to-SIGKILL grace on cancel; see
	// remote.Command.
	KillGrace time.Duration
	// Stdin, when set, is the runner's standard input: secrets it reads
	// there are on no command line (a client host's key).
	Stdin []byte
}

// New returns a client for the runner at runnerPath on ex.
func New(ex remote.Executor, runnerPath string) Client { return Client{Exec: ex, Path: runnerPath} }

// Run runs `pgbench-runner ARGS... --json` and decodes its JSON document
// into out (which may be nil). A failure the runner explained becomes an
// *Error; a runner that is not there, an error wrapping ErrNotInstalled;
// output that does not decode, an *OutputError.
func (c Client) Run(ctx context.Context, out any, args ...string) error {
	cmd := remote.Command{
		Args:      append(append([]string{c.Path}, args...), "--json"),
		OnStderr:  c.stderrLine,
		KillGrace: c.KillGrace,
	}
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	res, err := c.Exec.Run(ctx, cmd)
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			var doc struct {
				Error *ErrorBody `json:"error"`
			}
			if json.Unmarshal(bytes.TrimSpace(res.Stdout), &doc) == nil && doc.Error != nil {
				return &Error{Args: args, Kind: doc.Error.Kind, Message: doc.Error.Message, ExitCode: ee.ExitCode}
			}
		}
		if notFound(err) {
			return fmt.Errorf("%s on %s: %w", c.Path, c.Exec, ErrNotInstalled)
		}
		return fmt.Errorf("run pgbench-runner %s on %s: %w", strings.Join(args, " "), c.Exec, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.Stdout, out); err != nil {
		return &OutputError{Args: args, Stdout: res.Stdout, Err: err}
	}
	return nil
}

// stderrLine tells progress events from other lines.
func (c Client) stderrLine(line string) {
	if c.OnEvent != nil && strings.HasPrefix(line, "{") {
		var e campaign.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Event != "" {
			c.OnEvent(e)
			return
		}
	}
	if c.OnStderr != nil {
		c.OnStderr(line)
	}
}

// notFound reports whether err is the program itself missing: a local exec
// of an absent file, or the SSH executor's "command not found".
func notFound(err error) bool {
	var se *remote.StartError
	if !errors.As(err, &se) {
		return false
	}
	return errors.Is(err, fs.ErrNotExist) || strings.Contains(se.Err.Error(), "command not found")
}

// Uninstalled is the JSON of `pgbench-runner uninstall --json`.
type Uninstalled struct {
	Dir string `json:"dir"`
	// TuningReverted lists the knobs set back from the tuning state file
	// (empty without one).
	TuningReverted []string `json:"tuning_reverted"`
	// Campaigns are the campaign directories whose data was removed; their
	// reports stay.
	Campaigns []CampaignCleanup `json:"campaigns"`
	// Removed are the runner's files that were deleted.
	Removed []string `json:"removed"`
	// DirRemoved is set when --remove-dir deleted the install directory;
	// DirKept says why it was not (for example, kept reports).
	DirRemoved bool   `json:"dir_removed"`
	DirKept    string `json:"dir_kept,omitempty"`
	// Warnings are what could not be removed; the uninstall still went on.
	Warnings []string `json:"warnings"`
}

// CampaignCleanup is one campaign directory uninstall cleaned.
type CampaignCleanup struct {
	Dir     string   `json:"dir"`
	Removed []string `json:"removed"`
}
