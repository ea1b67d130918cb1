package runnerbin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
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
}

// Install uploads the runner matching the host's `uname -m` into dir (or
// DefaultDir), verifies it by sha256, and checks that it runs there.
func Install(ctx context.Context, ex remote.Executor, src Source, dir string) (Installed, error) {
	if dir == "" {
		dir = DefaultDir
	}
	res, err := ex.Run(ctx, remote.Command{Args: []string{"uname", "-m"}})
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
	dst := path.Join(dir, "pgbench-runner")
	up, err := ex.Upload(ctx, bytes.NewReader(bin), dst, 0o755)
	if err != nil {
		return Installed{}, fmt.Errorf("upload runner to %s:%s: %w", ex, dst, err)
	}
	v, err := RunnerVersion(ctx, ex, dst)
	if err != nil {
		return Installed{}, err
	}
	return Installed{Path: dst, Arch: arch, SHA256: up.SHA256, Version: v, Skipped: up.Skipped}, nil
}

// RunnerVersion runs `pgbench-runner version --json` at p on the host.
func RunnerVersion(ctx context.Context, ex remote.Executor, p string) (string, error) {
	res, err := ex.Run(ctx, remote.Command{Args: []string{p, "version", "--json"}})
	if err != nil {
		return "", fmt.Errorf("run %s on %s: %w", p, ex, err)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(res.Stdout, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("%s version --json on %s printed %q, not the runner's version document", p, ex, strings.TrimSpace(string(res.Stdout)))
	}
	return v.Version, nil
}
