package release

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// rsaAlgorithms are OpenPGP public-key algorithm ids 1-3 (RSA), the only
// kind the public Terraform registry accepts.
var rsaAlgorithms = map[string]bool{"1": true, "2": true, "3": true}

// checkSigningKey makes sure gpg holds a usable RSA secret key for the
// fingerprint, before anything is built.
func checkSigningKey(ctx context.Context, fingerprint string) error {
	if _, err := exec.LookPath("gpg"); err != nil {
		return fmt.Errorf("GPG_FINGERPRINT is set but gpg is not installed: install gnupg or unset GPG_FINGERPRINT for an unsigned release")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "gpg", "--batch", "--with-colons", "--list-secret-keys", "--", fingerprint)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("GPG_FINGERPRINT %s: gpg has no such secret key (gpg --list-secret-keys %s: %s); import the signing key first",
			fingerprint, fingerprint, strings.TrimSpace(stderr.String()))
	}
	algo := ""
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 3 && f[0] == "sec" {
			algo = f[3]
			break
		}
	}
	if !rsaAlgorithms[algo] {
		return fmt.Errorf("GPG_FINGERPRINT %s: the key's algorithm is %s, not RSA; the Terraform registry accepts only RSA signing keys", fingerprint, algoName(algo))
	}
	return nil
}

func algoName(id string) string {
	switch id {
	case "17":
		return "DSA"
	case "18":
		return "ECDH"
	case "19":
		return "ECDSA"
	case "22":
		return "EdDSA"
	case "":
		return "unknown"
	}
	return "algorithm " + id
}

// sign writes a binary detached signature of the checksums file.
func sign(ctx context.Context, o Options, sums string) (string, error) {
	name := sums + ".sig"
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "gpg", "--batch", "--yes", "--local-user", o.GPGFingerprint,
		"--output", filepath.Join(o.Dist, name), "--detach-sign", filepath.Join(o.Dist, sums))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("gpg --detach-sign: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return name, nil
}
