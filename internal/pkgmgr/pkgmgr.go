// Package pkgmgr installs packages with the host's package manager: apt-get
// on Debian and Ubuntu, dnf or yum on Fedora, RHEL and their relatives. It is
// the one place that knows package managers; the runner's bootstrap and the
// build dependencies of pgbuild both go through it.
package pkgmgr

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// Names lists the supported package managers in the order Detect tries them.
var Names = []string{"apt-get", "dnf", "yum"}

// ErrNoManager means none of Names is on PATH.
var ErrNoManager = errors.New("no supported package manager (" + strings.Join(Names, ", ") + ") found")

// Family names the package format of a manager: "deb" for apt-get, "rpm"
// for dnf and yum. Package names differ by family, not by manager.
type Family string

// The package families.
const (
	Deb Family = "deb"
	RPM Family = "rpm"
)

// env is added to every command: apt must never stop to ask.
var env = map[string]string{"DEBIAN_FRONTEND": "noninteractive"}

// Manager is the package manager of a host.
type Manager struct {
	// Name is "apt-get", "dnf" or "yum".
	Name string
	ex   remote.Executor
}

// Detect finds the first of Names on PATH; its commands run on this machine.
func Detect() (*Manager, error) {
	for _, n := range Names {
		if _, err := exec.LookPath(n); err == nil {
			return &Manager{Name: n, ex: remote.NewLocal()}, nil
		}
	}
	return nil, ErrNoManager
}

// Family is the package format the manager installs.
func (m *Manager) Family() Family {
	if m.Name == "apt-get" {
		return Deb
	}
	return RPM
}

// CheckName refuses what a package manager would take as an option or as
// several names (the runner's --packages is comma-separated): every package
// name goes through it, in the provider's plan-time validation and in the
// runner.
func CheckName(name string) error {
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t\r\n,") {
		return fmt.Errorf("%q is not a package name: it must be non-empty, contain no whitespace or comma and not start with -", name)
	}
	return nil
}

// Options tune an Install.
type Options struct {
	// NoRecommends skips apt's recommended packages (build dependencies
	// need none of them).
	NoRecommends bool
	// Log, when set, receives every output line of the package manager.
	Log func(line string)
}

// Result is what Install did; it is also the JSON of `pgbench-runner
// bootstrap --json`.
type Result struct {
	Manager string `json:"manager"`
	// Installed were missing and are installed now.
	Installed []string `json:"installed"`
	// Present were installed already.
	Present []string `json:"present"`
}

// Installed reports whether pkg is installed (for rpm, whether an installed
// package provides it).
func (m *Manager) Installed(ctx context.Context, pkg string) bool {
	if m.Family() == Deb {
		res, err := m.ex.Run(ctx, remote.Command{Args: []string{"dpkg-query", "-W", "-f=${Status}", "--", pkg}})
		return err == nil && strings.Contains(string(res.Stdout), "install ok installed")
	}
	_, err := m.ex.Run(ctx, remote.Command{Args: []string{"rpm", "-q", "--whatprovides", "--", pkg}})
	return err == nil
}

// Install installs those of pkgs that are missing. When an apt-get install
// fails it runs apt-get update and tries once more: a fresh machine often
// has no package lists yet.
func (m *Manager) Install(ctx context.Context, pkgs []string, opts Options) (Result, error) {
	res := Result{Manager: m.Name, Installed: []string{}, Present: []string{}}
	for _, p := range pkgs {
		if err := CheckName(p); err != nil {
			return res, err
		}
	}
	var missing []string
	for _, p := range pkgs {
		if m.Installed(ctx, p) {
			res.Present = append(res.Present, p)
		} else {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return res, nil
	}
	install := []string{m.Name, "install", "-y"}
	if opts.NoRecommends && m.Family() == Deb {
		install = append(install, "--no-install-recommends")
	}
	install = append(append(install, "--"), missing...)
	err := m.run(ctx, opts, install)
	if err != nil && m.Family() == Deb {
		if uerr := m.run(ctx, opts, []string{"apt-get", "update"}); uerr != nil {
			return res, fmt.Errorf("install %s: %w (and apt-get update: %w)", strings.Join(missing, " "), err, uerr)
		}
		err = m.run(ctx, opts, install)
	}
	if err != nil {
		return res, fmt.Errorf("install %s: %w", strings.Join(missing, " "), err)
	}
	res.Installed = missing
	return res, nil
}

func (m *Manager) run(ctx context.Context, opts Options, args []string) error {
	_, err := m.ex.Run(ctx, remote.Command{Args: args, Env: env, OnStdout: opts.Log, OnStderr: opts.Log})
	return err
}
