package release

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const testVersion = "0.0.1"

// TestReleaseInstallsThroughTerraform builds a signed release for
// linux_amd64 with `make release-snapshot`, then installs it the two ways a
// user gets it: from a filesystem mirror in packed layout (init, providers
// lock) and from an HTTPS registry on loopback that speaks the provider
// registry protocol (init verifies the signature and the zip's hash). Each
// applies a local pgbench_host whose runner reports the release's version,
// and destroys it.
func TestReleaseInstallsThroughTerraform(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release and applies a host with terraform; skipped in -short")
	}
	testhost.RequireRoot(t)
	tf := testhost.RequireCommand(t, "terraform", "/usr/local/bin")
	requireGPG(t)
	t.Setenv("GNUPGHOME", t.TempDir())
	fpr := genKey(t, "rsa3072")

	dist := filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	build := exec.Command("make", "release-snapshot", "VERSION="+testVersion, "PLATFORMS=linux_amd64",
		"DIST="+dist, "GPG_FINGERPRINT="+fpr)
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make release-snapshot: %v\n%s", err, out)
	}
	t.Logf("release for linux_amd64 built in %s", time.Since(start).Round(time.Second))
	checkDist(t, dist)

	installDir := filepath.Join(t.TempDir(), "install")
	t.Run("filesystem mirror", func(t *testing.T) {
		mirror := filepath.Join(t.TempDir(), "mirror")
		packed := filepath.Join(mirror, "registry.terraform.io", "pgbench-tf", "pgbench")
		if err := os.MkdirAll(packed, 0o755); err != nil {
			t.Fatal(err)
		}
		zipName := Name(testVersion, "linux_amd64.zip")
		if err := copyFile(filepath.Join(dist, zipName), filepath.Join(packed, zipName)); err != nil {
			t.Fatal(err)
		}
		w := newWorkspace(t, tf, fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/pgbench-tf/pgbench"]
  }
}
`, mirror), "pgbench-tf/pgbench", installDir)
		w.run("init", "-input=false", "-no-color")
		w.run("providers", "lock", "-no-color", "-fs-mirror="+mirror, "-platform=linux_amd64")
		// A packed mirror has no SHA256SUMS: the lock records the h1 hash
		// of what the zip unpacks to.
		w.expectLockHash(h1Of(t, filepath.Join(dist, zipName)))
		w.applyAndDestroy(installDir)
	})

	t.Run("https registry", func(t *testing.T) {
		host := serveRegistry(t, dist, fpr)
		w := newWorkspace(t, tf, "", host+"/pgbench-tf/pgbench", installDir)
		out := w.run("init", "-input=false", "-no-color")
		signed := regexp.MustCompile(`Installed ` + regexp.QuoteMeta(host) + `/pgbench-tf/pgbench v` + regexp.QuoteMeta(testVersion) +
			` \((self-)?signed, key ID ` + fpr[len(fpr)-16:] + `\)`)
		if !signed.MatchString(out) {
			t.Fatalf("terraform init did not report v%s signed by key %s:\n%s", testVersion, fpr[len(fpr)-16:], out)
		}
		// From a registry the lock holds the zip's hash from the signed
		// SHA256SUMS, beside the h1 hash of its contents.
		w.expectLockHash("zh:" + sumOf(t, dist, Name(testVersion, "linux_amd64.zip")))
		w.expectLockHash(h1Of(t, filepath.Join(dist, Name(testVersion, "linux_amd64.zip"))))
		w.applyAndDestroy(installDir)
	})
}

// checkDist asserts the files a registry needs, and that the zip holds the
// one binary Terraform looks for.
func checkDist(t *testing.T, dist string) {
	t.Helper()
	want := []string{
		Name(testVersion, "linux_amd64.zip"), Name(testVersion, "manifest.json"),
		RunnerArchive(testVersion, "amd64"), RunnerArchive(testVersion, "arm64"),
		Name(testVersion, "SHA256SUMS"), Name(testVersion, "SHA256SUMS.sig"),
	}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(dist, f)); err != nil {
			t.Errorf("release is missing %s: %v", f, err)
		}
	}
	for _, f := range want[:4] {
		sumOf(t, dist, f) // fails when SHA256SUMS does not list it
	}
	verify := exec.Command("gpg", "--batch", "--verify", filepath.Join(dist, Name(testVersion, "SHA256SUMS.sig")), filepath.Join(dist, Name(testVersion, "SHA256SUMS")))
	if out, err := verify.CombinedOutput(); err != nil {
		t.Fatalf("gpg --verify of the checksums: %v\n%s", err, out)
	}
	zr, err := zip.OpenReader(filepath.Join(dist, Name(testVersion, "linux_amd64.zip")))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != BinaryName(testVersion, "linux") {
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		t.Fatalf("zip holds %v, want exactly [%s]", names, BinaryName(testVersion, "linux"))
	}
	manifest, err := os.ReadFile(filepath.Join(dist, Name(testVersion, "manifest.json")))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			Protocols []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil || m.Version != 1 || len(m.Metadata.Protocols) != 1 || m.Metadata.Protocols[0] != "6.0" {
		t.Fatalf("manifest = %s (%v), want version 1 and protocol 6.0", manifest, err)
	}
}

// sumOf returns the sha256 SHA256SUMS lists for a file, after checking it
// against the file itself.
func sumOf(t *testing.T, dist, name string) string {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dist, Name(testVersion, "SHA256SUMS")))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(sums), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if ok && file == name {
			got, err := fileSHA256(filepath.Join(dist, name))
			if err != nil {
				t.Fatal(err)
			}
			if got != sum {
				t.Fatalf("SHA256SUMS says %s for %s, the file's sha256 is %s", sum, name, got)
			}
			return sum
		}
	}
	t.Fatalf("SHA256SUMS does not list %s:\n%s", name, sums)
	return ""
}

type workspace struct {
	t   *testing.T
	tf  string
	dir string
	env []string
}

// newWorkspace writes a configuration with one local pgbench_host from the
// given source address, pinned to the test version, and a CLI configuration
// of its own.
func newWorkspace(t *testing.T, tf, cliConfig, source, installDir string) *workspace {
	t.Helper()
	dir := t.TempDir()
	main := fmt.Sprintf(`terraform {
  required_providers {
    pgbench = {
      source  = %q
      version = "= %s"
    }
  }
}

resource "pgbench_host" "here" {
  local       = true
  install_dir = %q
}

output "runner_version" {
  value = pgbench_host.here.runner_version
}
`, source, testVersion, installDir)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, []byte(cliConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_PLUGIN_CACHE_DIR=")
	return &workspace{t: t, tf: tf, dir: dir, env: env}
}

func (w *workspace) run(args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.tf, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (w *workspace) expectLockHash(hash string) {
	w.t.Helper()
	lock, err := os.ReadFile(filepath.Join(w.dir, ".terraform.lock.hcl"))
	if err != nil {
		w.t.Fatal(err)
	}
	if !strings.Contains(string(lock), `"`+hash+`"`) {
		w.t.Fatalf("lock file has no %s:\n%s", hash, lock)
	}
}

// h1Of computes Terraform's h1 hash of a provider zip: the Go module
// directory hash (dirhash.Hash1) of the files it holds, sha256 over the
// sorted lines "<sha256 hex>  <name>".
func h1Of(t *testing.T, zipPath string) string {
	t.Helper()
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var lines []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%x  %s\n", h.Sum(nil), f.Name))
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return "h1:" + base64.StdEncoding.EncodeToString(sum[:])
}

// applyAndDestroy applies the host, checks the runner's version on it, and
// destroys it, after which the install directory must be gone or empty.
func (w *workspace) applyAndDestroy(installDir string) {
	w.t.Helper()
	start := time.Now()
	w.run("apply", "-input=false", "-auto-approve", "-no-color")
	w.t.Logf("host applied %s after init", time.Since(start).Round(100*time.Millisecond))
	destroyed := false
	defer func() {
		if !destroyed {
			w.run("destroy", "-input=false", "-auto-approve", "-no-color")
		}
	}()
	if got := strings.TrimSpace(w.run("output", "-raw", "runner_version")); got != testVersion {
		w.t.Errorf("runner_version = %q, want %q", got, testVersion)
	}
	w.run("destroy", "-input=false", "-auto-approve", "-no-color")
	destroyed = true
	entries, err := os.ReadDir(installDir)
	if err == nil && len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		w.t.Errorf("install directory %s holds %v after destroy, want it empty or gone", installDir, names)
	}
}

// serveRegistry serves dist through the provider registry protocol over
// HTTPS on loopback, with a certificate for localhost that only this test's
// terraform trusts (SSL_CERT_FILE), and returns the registry's host.
func serveRegistry(t *testing.T, dist, fpr string) string {
	t.Helper()
	cert, certPEM := localhostCert(t)
	armor, err := exec.Command("gpg", "--batch", "--armor", "--export", fpr).Output()
	if err != nil {
		t.Fatalf("gpg --export: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := fmt.Sprintf("localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	base := "https://" + host
	zipName := Name(testVersion, "linux_amd64.zip")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"providers.v1": "/v1/providers/"})
	})
	mux.HandleFunc("GET /v1/providers/pgbench-tf/pgbench/versions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"versions": []any{map[string]any{
			"version": testVersion, "protocols": []string{"6.0"},
			"platforms": []any{map[string]string{"os": "linux", "arch": "amd64"}},
		}}})
	})
	mux.HandleFunc("GET /v1/providers/pgbench-tf/pgbench/"+testVersion+"/download/linux/amd64", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"protocols": []string{"6.0"}, "os": "linux", "arch": "amd64",
			"filename":              zipName,
			"download_url":          base + "/dist/" + zipName,
			"shasums_url":           base + "/dist/" + Name(testVersion, "SHA256SUMS"),
			"shasums_signature_url": base + "/dist/" + Name(testVersion, "SHA256SUMS.sig"),
			"shasum":                sumOf(t, dist, zipName),
			"signing_keys": map[string]any{"gpg_public_keys": []any{map[string]string{
				"key_id": fpr[len(fpr)-16:], "ascii_armor": string(armor),
			}}},
		})
	})
	mux.Handle("GET /dist/", http.StripPrefix("/dist/", http.FileServer(http.Dir(dist))))
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	return host
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// localhostCert makes a self-signed certificate for localhost and 127.0.0.1.
func localhostCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}

func requireGPG(t *testing.T) {
	t.Helper()
	testhost.RequireCommand(t, "gpg")
}

// genKey makes a signing key without a passphrase in $GNUPGHOME and returns
// its fingerprint.
func genKey(t *testing.T, algo string) string {
	t.Helper()
	gen := exec.Command("gpg", "--batch", "--passphrase", "", "--quick-gen-key",
		"pgbench release test <release-test@pgbench.invalid>", algo, "sign", "never")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("gpg --quick-gen-key %s: %v\n%s", algo, err, out)
	}
	out, err := exec.Command("gpg", "--batch", "--with-colons", "--list-secret-keys").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			return f[9]
		}
	}
	t.Fatalf("no fingerprint in gpg's listing:\n%s", out)
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(string(bytes.TrimSpace(out)))
}
