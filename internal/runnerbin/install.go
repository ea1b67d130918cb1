package runnerbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// DefaultDir is where the runner is installed on a host.
const DefaultDir = "/usr/local/lib/pgbench"

// Source yields the runner binary for a Go architecture: the embedded ones,
// or a file the user built.
type Source func(goarch string) ([]byte, error)

// Installed describes a runner on a host.
type Installed struct {
	Path    string // absolute path of the binary on the host
	Arch    string // Go architecture of the host
	SHA256  string
	Version string // as `pgbench-runner version --json` reports it
	Skipped bool   // the host already had this exact binary
	// NewDir is set when the install directory did not exist before.
	NewDir bool
	// TuneState is set when the directory already held a tuning state file,
	// left by an earlier install whose runner has since vanished.
	TuneState bool
}

// Install uploads the runner matching the host's `uname -m` into dir (or
// DefaultDir), verifies it by sha256, and checks that it runs there.
func Install(ctx context.Context, ex remote.Executor, src Source, dir string) (Installed, error) {
	if dir == "" {
		dir = DefaultDir
	}
	res, err := ex.Run(ctx, remote.Command{Args: []string{"uname", "-m"}})
	if said, user, ok := remote.LoginRefusal(res, err); ok {
		hint := "log in as the image's default user"
		if user != "" {
			hint = fmt.Sprintf("log in as %q instead (it needs passwordless sudo)", user)
		}
		return Installed{}, fmt.Errorf("%s refuses this login: it answered: %s; %s", ex, said, hint)
	}
	if err != nil {
		return Installed{}, fmt.Errorf("detect architecture of %s: %w", ex, err)
	}
	arch, err := Arch(string(res.Stdout))
	if err != nil {
		return Installed{}, fmt.Errorf("host %s: %w", ex, err)
	}
	bin, err := src(arch)
	if err != nil {
		return Installed{}, err
	}
	// What was there before is only knowable now: the upload makes the
	// directory.
	in := Installed{Path: runnerclient.BinaryPath(dir), Arch: arch,
		NewDir: !exists(ctx, ex, dir), TuneState: exists(ctx, ex, runnerclient.TuneStatePath(dir))}
	up, err := ex.Upload(ctx, bytes.NewReader(bin), in.Path, 0o755)
	if err != nil {
		return Installed{}, fmt.Errorf("upload runner to %s:%s: %w", ex, in.Path, err)
	}
	in.SHA256, in.Skipped = up.SHA256, up.Skipped
	if in.Version, err = RunnerVersion(ctx, ex, in.Path); err != nil {
		return Installed{}, err
	}
	return in, nil
}

// exists reports whether p exists on the host. The runner is not there yet
// to ask, so this is the installer's one probe besides uname.
func exists(ctx context.Context, ex remote.Executor, p string) bool {
	_, err := ex.Run(ctx, remote.Command{Args: []string{"test", "-e", p}})
	return err == nil
}

// RunnerVersion runs `pgbench-runner version --json` at p on the host. A
// runner that is not there gives an error wrapping
// runnerclient.ErrNotInstalled.
func RunnerVersion(ctx context.Context, ex remote.Executor, p string) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	err := runnerclient.New(ex, p).Run(ctx, &v, "version")
	var oe *runnerclient.OutputError
	if errors.As(err, &oe) {
		return "", fmt.Errorf("%s version --json on %s printed %q, not the runner's version document", p, ex, bytes.TrimSpace(oe.Stdout))
	}
	if err != nil {
		return "", err
	}
	if v.Version == "" {
		return "", fmt.Errorf("%s version --json on %s printed no version: not the runner's version document", p, ex)
	}
	return v.Version, nil
}
