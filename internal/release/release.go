// Package release builds a release of the provider the way a Terraform
// registry serves it: one zip per platform holding
// terraform-provider-pgbench_vX.Y.Z, the registry manifest, the static
// runner archives, a SHA256SUMS file over all of them and its detached GPG
// signature. `make release-snapshot` and the release workflow both run it,
// so there is one definition of a release.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Provider is the provider's type name, as in terraform-provider-<type>.
const Provider = "pgbench"

// DefaultPlatforms are the OS_ARCH pairs a release serves: the machines
// Terraform runs on, laptops included.
var DefaultPlatforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"}

// RunnerArchs are the architectures of the runner: it runs on Linux hosts
// only, and every provider binary embeds both.
var RunnerArchs = []string{"amd64", "arm64"}

// semver is the grammar of semver.org 2.0.0, without a leading v.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// Options say what to build and where.
type Options struct {
	Version   string   // X.Y.Z, without a leading v
	Source    string   // the repository's root
	Dist      string   // output directory, emptied first
	Platforms []string // OS_ARCH pairs; DefaultPlatforms when empty
	// GPGFingerprint names the secret key that signs SHA256SUMS; empty
	// leaves the release unsigned.
	GPGFingerprint string
	Log            io.Writer
}

// Artifacts are the files of a built release, by base name.
type Artifacts struct {
	Zips      []string
	Runners   []string
	Manifest  string
	Sums      string
	Signature string // empty when unsigned
}

// Check validates the options before anything is built: the version, the
// platforms and the signing key.
func (o *Options) Check(ctx context.Context) error {
	if o.Version == "" {
		return errors.New("VERSION is required, e.g. make release-snapshot VERSION=0.2.0")
	}
	if strings.HasPrefix(o.Version, "v") {
		return fmt.Errorf("VERSION %q: give the version without the leading v (%s)", o.Version, o.Version[1:])
	}
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("VERSION %q is not a semantic version (MAJOR.MINOR.PATCH, e.g. 0.2.0 or 1.0.0-rc.1)", o.Version)
	}
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	for _, p := range o.Platforms {
		if !slices.Contains(DefaultPlatforms, p) {
			return fmt.Errorf("platform %q is not one a release serves (%s)", p, strings.Join(DefaultPlatforms, ", "))
		}
	}
	if o.GPGFingerprint != "" {
		if err := checkSigningKey(ctx, o.GPGFingerprint); err != nil {
			return err
		}
	}
	return nil
}

// Build checks the options, then builds the runners, the provider for each
// platform, the archives, the checksums and the signature into o.Dist.
func Build(ctx context.Context, o Options) (Artifacts, error) {
	if err := o.Check(ctx); err != nil {
		return Artifacts{}, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	stage, err := stageSource(o.Source)
	if err != nil {
		return Artifacts{}, fmt.Errorf("stage the source: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := resetDir(o.Dist); err != nil {
		return Artifacts{}, err
	}
	var a Artifacts
	if a.Runners, err = buildRunners(ctx, o, stage); err != nil {
		return Artifacts{}, fmt.Errorf("build the runners: %w", err)
	}
	if a.Zips, err = buildProviders(ctx, o, stage); err != nil {
		return Artifacts{}, fmt.Errorf("build the provider: %w", err)
	}
	if a.Manifest, err = copyManifest(o); err != nil {
		return Artifacts{}, fmt.Errorf("registry manifest: %w", err)
	}
	if a.Sums, err = writeSums(o, a); err != nil {
		return Artifacts{}, fmt.Errorf("checksums: %w", err)
	}
	if o.GPGFingerprint != "" {
		if a.Signature, err = sign(ctx, o, a.Sums); err != nil {
			return Artifacts{}, fmt.Errorf("sign %s: %w", a.Sums, err)
		}
	}
	return a, nil
}

// Name is the base name of a release file: terraform-provider-pgbench_VERSION_SUFFIX.
func Name(version, suffix string) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s", Provider, version, suffix)
}

// RunnerArchive is the base name of a runner archive.
func RunnerArchive(version, arch string) string {
	return fmt.Sprintf("pgbench-runner_%s_linux_%s.tar.gz", version, arch)
}

// BinaryName is the provider binary inside a zip, as Terraform looks for it.
func BinaryName(version, goos string) string {
	name := fmt.Sprintf("terraform-provider-%s_v%s", Provider, version)
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

func copyManifest(o Options) (string, error) {
	b, err := os.ReadFile(filepath.Join(o.Source, "terraform-registry-manifest.json"))
	if err != nil {
		return "", err
	}
	name := Name(o.Version, "manifest.json")
	return name, os.WriteFile(filepath.Join(o.Dist, name), b, 0o644)
}

// writeSums writes SHA256SUMS in sha256sum's format, one line per file,
// sorted by name.
func writeSums(o Options, a Artifacts) (string, error) {
	files := append(append(append([]string{}, a.Zips...), a.Runners...), a.Manifest)
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(o.Dist, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	name := Name(o.Version, "SHA256SUMS")
	return name, os.WriteFile(filepath.Join(o.Dist, name), []byte(b.String()), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func resetDir(dir string) error {
	if dir == "" {
		return errors.New("no output directory")
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}
