package runnerbin

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// buildRunner compiles runner/ with a known version for the install tests.
func buildRunner(t *testing.T, version string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pgbench-runner")
	// -trimpath and CGO_ENABLED=0 as make runner builds it: the compiled
	// packages come from the build cache that build filled.
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "-ldflags", "-X main.version="+version, "../../runner")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build runner: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInstallLocal(t *testing.T) {
	bin := buildRunner(t, "1.2.3-test")
	var asked []string
	src := func(arch string) ([]byte, error) {
		asked = append(asked, arch)
		return bin, nil
	}
	dir := filepath.Join(t.TempDir(), "lib", "pgbench")
	ex := remote.NewLocal()
	ctx := context.Background()

	got, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	if got.Arch != runtime.GOARCH || len(asked) != 1 || asked[0] != runtime.GOARCH {
		t.Errorf("asked the source for %v and got arch %q, want %q", asked, got.Arch, runtime.GOARCH)
	}
	if got.Version != "1.2.3-test" {
		t.Errorf("installed version = %q, want 1.2.3-test", got.Version)
	}
	if got.Skipped {
		t.Errorf("first install Skipped = true, want false")
	}
	if got.Path != filepath.Join(dir, "pgbench-runner") {
		t.Errorf("path = %q, want it under %s", got.Path, dir)
	}
	fi, err := os.Stat(got.Path)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed runner stat = %v, %v; want mode 0755", fi, err)
	}

	again, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("second Install: %v", err)
	}
	if !again.Skipped || again.SHA256 != got.SHA256 {
		t.Errorf("second install = %+v, want Skipped with sha256 %s", again, got.SHA256)
	}
}

func TestInstallNotEmbeddedSaysHowToBuild(t *testing.T) {
	src := func(string) ([]byte, error) { return nil, &ErrNotEmbedded{Arch: runtime.GOARCH} }
	_, err := Install(context.Background(), remote.NewLocal(), src, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("Install without a runner error = %v, want one that says to run make build", err)
	}
}

func TestInstallRejectsNonRunner(t *testing.T) {
	src := func(string) ([]byte, error) { return []byte("#!/bin/sh\necho hello\n"), nil }
	_, err := Install(context.Background(), remote.NewLocal(), src, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not the runner's version document") {
		t.Fatalf("Install of a non-runner error = %v, want a version document error", err)
	}
}

// TestInstallSSH installs the runner on a real test host over SSH, checks
// that it runs there, and that a second install skips the transfer.
func TestInstallSSH(t *testing.T) {
	testhost.RequireRoot(t) // before the build, which a skip does not need
	bin := buildRunner(t, "4.5.6-ssh")
	h := testhost.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := remote.DialSSH(ctx, remote.SSHConfig{
		Host: h.Addr, Port: h.Port, User: h.User,
		PrivateKey: h.ClientKeyPEM, HostKey: h.HostKeyLine,
	})
	if err != nil {
		t.Fatalf("DialSSH: %v", err)
	}
	defer ex.Close()
	src := func(string) ([]byte, error) { return bin, nil }
	dir := filepath.Join(h.Dir, "lib")

	got, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("Install over SSH: %v", err)
	}
	if got.Version != "4.5.6-ssh" || got.Skipped {
		t.Errorf("install = %+v, want version 4.5.6-ssh, not skipped", got)
	}
	again, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("second Install over SSH: %v", err)
	}
	if !again.Skipped {
		t.Errorf("second install Skipped = false, want true")
	}
}

// Install tells the caller what was in the directory before it, so a
// destroy removes only a directory the install made.
func TestInstallReportsWhatWasThere(t *testing.T) {
	fake := []byte("#!/bin/sh\necho '{\"version\": \"fake\"}'\n")
	src := func(string) ([]byte, error) { return fake, nil }
	dir := filepath.Join(t.TempDir(), "pgbench")
	ctx := context.Background()
	ex := remote.NewLocal()
	first, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	if !first.NewDir || first.TuneState {
		t.Errorf("first install: NewDir %v, TuneState %v; want true, false", first.NewDir, first.TuneState)
	}
	again, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("second Install: %v", err)
	}
	if again.NewDir || again.TuneState {
		t.Errorf("second install: NewDir %v, TuneState %v; want false, false", again.NewDir, again.TuneState)
	}
	// A runner that vanished, leaving its tuning state behind.
	if err := os.WriteFile(filepath.Join(dir, "tune-state.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(first.Path)
	third, err := Install(ctx, ex, src, dir)
	if err != nil {
		t.Fatalf("third Install: %v", err)
	}
	if third.NewDir || !third.TuneState {
		t.Errorf("install over a tuning state: NewDir %v, TuneState %v; want false, true", third.NewDir, third.TuneState)
	}
}

// TestInstallOnStockImage: a stock cloud image answers root with
// cloud-init's forced command; Install reports what it said and the user
// to log in as, and as that user (passwordless sudo) it installs.
func TestInstallOnStockImage(t *testing.T) {
	const user = "pgbt-stock"
	testhost.RequireRoot(t) // before the build, which a skip does not need
	bin := buildRunner(t, "4.5.7-stock")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spk, _ := ssh.NewPublicKey(pub)
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := pem.EncodeToMemory(blk)
	h := testhost.New(t, testhost.WithLoginUser(user, string(ssh.MarshalAuthorizedKey(spk))))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := func(string) ([]byte, error) { return bin, nil }
	dir := filepath.Join(t.TempDir(), "lib")
	dial := func(u string) remote.Executor {
		ex, err := remote.DialSSH(ctx, remote.SSHConfig{Host: h.Addr, Port: h.Port, User: u, PrivateKey: key, HostKey: h.HostKeyLine})
		if err != nil {
			t.Fatalf("DialSSH as %s: %v", u, err)
		}
		t.Cleanup(func() { ex.Close() })
		return ex
	}
	_, err = Install(ctx, dial("root"), src, dir)
	want := `refuses this login: it answered: Please login as the user "` + user + `" rather than the user "root".; log in as "` + user + `"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Install as root on a stock image = %v, want an error containing %q", err, want)
	}
	got, err := Install(ctx, dial(user), src, dir)
	if err != nil {
		t.Fatalf("Install as %s: %v", user, err)
	}
	if got.Version != "4.5.7-stock" {
		t.Errorf("install as %s = %+v, want version 4.5.7-stock", user, got)
	}
	if fi, err := os.Stat(got.Path); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("runner %s: %v, %v; want a file owned by root (installed through sudo)", got.Path, fi, err)
	}
}
