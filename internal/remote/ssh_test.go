package remote

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// clientKey is a fresh OpenSSH private key, for hosts that make none.
func clientKey(t *testing.T) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(b)
}

// TestSSHUnreachableKeepsRealCause: a host that refuses connections until
// the deadline is reported as refusing, not as out of time, although the
// last attempt is the one the deadline cuts short.
func TestSSHUnreachableKeepsRealCause(t *testing.T) {
	t.Parallel()
	h := testhost.New(t, testhost.WithoutSSHD())
	// The ctx and the retry bound end together, as in ec2host.WaitSSH.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := DialSSH(ctx, SSHConfig{Host: h.Addr, PrivateKey: clientKey(t), TrustOnFirstUse: true, ReachableWithin: 1500 * time.Millisecond})
	if err == nil {
		t.Fatalf("DialSSH to a host without sshd succeeded")
	}
	t.Logf("unreachable, as the user sees it: %v", err)
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error = %q, want the real cause, connection refused", err)
	}
	for _, bad := range []string{"context deadline exceeded", "i/o timeout", "operation was canceled"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error = %q names %q, the deadline rather than the cause", err, bad)
		}
	}
}

// TestSSHHostKeySet: any key of a pinned set is accepted; a host whose
// key is in none is refused with a message naming where the pins came
// from, every pinned fingerprint and the one presented.
func TestSSHHostKeySet(t *testing.T) {
	t.Parallel()
	a, b, c := testhost.New(t), testhost.New(t), testhost.New(t)
	e, err := DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: a.ClientKeyPEM,
		HostKeys: []string{b.HostKeyFingerprint, a.HostKeyLine}})
	if err != nil {
		t.Fatalf("dial with a set holding the host's key: %v", err)
	}
	if got := e.HostKeyFingerprint(); got != a.HostKeyFingerprint {
		t.Errorf("presented fingerprint = %s, want %s", got, a.HostKeyFingerprint)
	}
	e.Close()

	_, err = DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: a.ClientKeyPEM,
		HostKeys: []string{b.HostKeyFingerprint, c.HostKeyLine}, HostKeySource: "the console of instance i-0feed"})
	var hk *HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("dial with a set without the host's key = %v, want *HostKeyError", err)
	}
	t.Logf("mismatch, as the user sees it: %v", err)
	want := "the console of instance i-0feed showed " + b.HostKeyFingerprint + " or " + c.HostKeyFingerprint +
		" but the server at " + a.Addr + ":22 presented " + a.HostKeyFingerprint
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to say %q", err, want)
	}
}
