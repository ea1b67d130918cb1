package release

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRefusesBadVersions(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"", "VERSION is required"},
		{"v0.2.0", "without the leading v"},
		{"0.2", "not a semantic version"},
		{"0.2.0.1", "not a semantic version"},
		{"01.2.3", "not a semantic version"},
		{"latest", "not a semantic version"},
	} {
		o := Options{Version: tc.version}
		err := o.Check(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(version %q) = %v, want an error containing %q", tc.version, err, tc.want)
		}
	}
	for _, v := range []string{"0.2.0", "1.0.0-rc.1", "1.2.3+build.5"} {
		o := Options{Version: v}
		if err := o.Check(context.Background()); err != nil {
			t.Errorf("Check(version %q) = %v, want nil", v, err)
		}
	}
}

func TestCheckRefusesUnknownPlatform(t *testing.T) {
	o := Options{Version: "0.2.0", Platforms: []string{"linux_amd64", "plan9_386"}}
	err := o.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"plan9_386"`) {
		t.Fatalf("Check = %v, want an error naming plan9_386", err)
	}
}

// A fingerprint gpg does not know fails before anything is built: dist is
// not even created.
func TestBuildRefusesMissingSigningKeyFirst(t *testing.T) {
	requireGPG(t)
	t.Setenv("GNUPGHOME", t.TempDir())
	dist := filepath.Join(t.TempDir(), "dist")
	_, err := Build(context.Background(), Options{Version: "0.2.0", Source: t.TempDir(), Dist: dist,
		GPGFingerprint: "0123456789ABCDEF0123456789ABCDEF01234567"})
	if err == nil || !strings.Contains(err.Error(), "no such secret key") {
		t.Fatalf("Build = %v, want a missing-key error", err)
	}
	if _, err := os.Stat(dist); !os.IsNotExist(err) {
		t.Fatalf("dist exists after a refused build (stat: %v)", err)
	}
}

// The registry takes RSA keys only: an EdDSA key is refused by name.
func TestCheckRefusesNonRSAKey(t *testing.T) {
	requireGPG(t)
	t.Setenv("GNUPGHOME", t.TempDir())
	fpr := genKey(t, "ed25519")
	o := Options{Version: "0.2.0", GPGFingerprint: fpr}
	err := o.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "EdDSA") || !strings.Contains(err.Error(), "RSA") {
		t.Fatalf("Check = %v, want an error saying the key is EdDSA, not RSA", err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Name("0.2.0", "linux_amd64.zip"), "terraform-provider-pgbench_0.2.0_linux_amd64.zip"},
		{Name("0.2.0", "SHA256SUMS"), "terraform-provider-pgbench_0.2.0_SHA256SUMS"},
		{Name("0.2.0", "manifest.json"), "terraform-provider-pgbench_0.2.0_manifest.json"},
		{BinaryName("0.2.0", "linux"), "terraform-provider-pgbench_v0.2.0"},
		{BinaryName("0.2.0", "windows"), "terraform-provider-pgbench_v0.2.0.exe"},
		{RunnerArchive("0.2.0", "arm64"), "pgbench-runner_0.2.0_linux_arm64.tar.gz"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
