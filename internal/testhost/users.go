package testhost

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WithLoginUser makes the host log in as a stock cloud image does:
// keyLine (an authorized_keys line, the launch key) is authorized for
// user, a real account with passwordless sudo as cloud-init gives an
// image's default user (admin on Debian, ubuntu on Ubuntu, ec2-user on
// Amazon Linux), and root's copy of the key carries cloud-init's
// disable_root forced command: a login as root prints "Please login as
// the user ... rather than the user root." and exits 142. The account is
// created on this machine if it does not exist (test hosts share its
// files) and removed with the last host that uses it.
func WithLoginUser(user, keyLine string) Option {
	return func(o *options) {
		o.loginUser = user
		o.loginKey = strings.TrimSpace(keyLine)
	}
}

// DisableRootLine is the line cloud-init writes to root's authorized_keys
// for keyLine when an image disables root logins in favour of user
// (cloud-init's disable_root_opts, with its own quoting).
func DisableRootLine(user, keyLine string) string {
	return `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"` +
		user + `\" rather than the user \"root\".';echo;sleep 10;exit 142" ` + strings.TrimSpace(keyLine)
}

const (
	usersDir    = "/run/pgbench-testhost-users"
	sudoersDir  = "/etc/sudoers.d"
	userComment = "pgbench test host login user"
)

// addLoginUser makes sure the account name exists with passwordless sudo
// and registers the host ns as one of its users; the returned function
// unregisters it and, for the last host of an account this package
// created, removes the account and its sudoers file.
func addLoginUser(t testing.TB, name, ns string) func() {
	t.Helper()
	unlock := lockUsers(t)
	defer unlock()
	dir := filepath.Join(usersDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("register login user %s: %v", name, err)
	}
	if _, err := user.Lookup(name); err != nil {
		// '*' is no password but not a locked account: sshd without PAM
		// refuses locked ones ('!') even for key logins.
		if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", "--comment", userComment,
			"--password", "*", name).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
		write(t, filepath.Join(dir, ".created"), nil, 0o600)
	}
	sudoers := filepath.Join(sudoersDir, "pgbench-testhost-"+name)
	if _, err := os.Stat(filepath.Join(dir, ".created")); err == nil {
		if err := os.MkdirAll(sudoersDir, 0o755); err != nil {
			t.Fatalf("create %s: %v", sudoersDir, err)
		}
		write(t, sudoers, []byte(name+" ALL=(ALL) NOPASSWD:ALL\n"), 0o440)
	}
	write(t, filepath.Join(dir, ns), nil, 0o600)
	return func() {
		unlock := lockUsers(t)
		defer unlock()
		os.Remove(filepath.Join(dir, ns))
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != ".created" {
				return // another host still logs in as name
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ".created")); err == nil {
			os.Remove(sudoers)
			// The account's killed sessions may take a moment to exit;
			// userdel refuses a user that still runs processes.
			var out []byte
			var err error
			for i := 0; i < 50; i++ {
				if out, err = exec.Command("userdel", "--remove", name).CombinedOutput(); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("userdel %s: %v: %s", name, err, out)
			}
		}
		os.RemoveAll(dir)
	}
}

// lockUsers serializes account changes across test processes.
func lockUsers(t testing.TB) func() {
	t.Helper()
	unlock, err := lockAlloc()
	if err != nil {
		t.Fatal(err)
	}
	return unlock
}

// authorizedKeys are the authorized_keys files of the host's sshd, one
// per user (AuthorizedKeysFile .../authorized_keys.%u).
func (h *Host) authorizedKeys(clientLine string) map[string]string {
	root := []string{clientLine}
	files := map[string]string{}
	if h.loginUser != "" {
		root = append(root, DisableRootLine(h.loginUser, h.loginKey))
		files[h.loginUser] = fmt.Sprintf("%s\n%s\n", clientLine, h.loginKey)
	}
	root = append(root, h.extraAuthz...)
	files["root"] = strings.Join(root, "\n") + "\n"
	return files
}

// ownBy gives the file p to the account name.
func ownBy(t testing.TB, p, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("look up %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatalf("chown %s to %s: %v", p, name, err)
	}
}
