package testhost

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestLoginUserAsStockImage: the launch key logs in as the login user,
// who has passwordless sudo, while root with the same key gets
// cloud-init's refusal (its text on stdout, exit status 142); the account
// is removed with the host.
func TestLoginUserAsStockImage(t *testing.T) {
	const name = "pgbt-login"
	if _, err := user.Lookup(name); err == nil {
		t.Fatalf("account %s exists before the test", name)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spk, _ := ssh.NewPublicKey(pub)
	signer, _ := ssh.NewSignerFromKey(priv)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(spk)))

	t.Run("host", func(t *testing.T) {
		h := New(t, WithLoginUser(name, line))
		if h.LoginUser != name {
			t.Fatalf("LoginUser = %q, want %q", h.LoginUser, name)
		}
		run := func(u, cmd string) (string, error) {
			c, err := ssh.Dial("tcp", net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), &ssh.ClientConfig{
				User: u, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
				HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second,
			})
			if err != nil {
				return "", err
			}
			defer c.Close()
			s, err := c.NewSession()
			if err != nil {
				return "", err
			}
			defer s.Close()
			var out bytes.Buffer
			s.Stdout = &out
			err = s.Run(cmd)
			return out.String(), err
		}
		got, err := run(name, "sudo -n id -u")
		if err != nil || strings.TrimSpace(got) != "0" {
			t.Fatalf("as %s: sudo -n id -u = %q, %v; want 0", name, got, err)
		}
		got, err = run("root", "id -u")
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() != 142 {
			t.Fatalf("as root: %q, %v; want exit status 142", got, err)
		}
		if want := `Please login as the user "` + name + `" rather than the user "root".`; !strings.Contains(got, want) {
			t.Fatalf("as root the server said %q, want %q", got, want)
		}
	})
	if _, err := user.Lookup(name); err == nil {
		t.Fatalf("account %s still exists after the host is gone", name)
	}
}
