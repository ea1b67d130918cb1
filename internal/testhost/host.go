package testhost

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// Host is a real host for tests: a network namespace reachable from the
// test over a veth pair, running its own sshd. It shares the filesystem and
// the PID namespace with the test.
type Host struct {
	Addr               string // the namespace side of the veth, 10.200.N.2
	HostAddr           string // the test machine's side, 10.200.N.1
	Port               int
	User               string
	ClientKeyPEM       []byte // OpenSSH-format private key accepted by sshd
	HostKeyLine        string // authorized_keys-format host public key
	HostKeyFingerprint string // "SHA256:..."
	Namespace          string
	Dir                string // temp dir with the keys, config and sshd log
	// LoginUser is the account a stock image logs in as (WithLoginUser);
	// empty when root logs in.
	LoginUser string

	logPath    string
	behind     *Host
	extraAuthz []string
	loginUser  string
	loginKey   string

	hostKeyPEM    []byte
	clientKeyLine string
}

type options struct {
	sshd       bool
	behind     *Host
	authorized []string
	loginUser  string
	loginKey   string
}

// Option changes what New sets up.
type Option func(*options)

// WithoutSSHD creates the namespace and its address but starts no sshd, so
// connections to it are refused: a host that is not reachable (yet).
func WithoutSSHD() Option { return func(o *options) { o.sshd = false } }

// Behind puts the host on a private link to bastion instead of on a link to
// the test machine: the other end of its veth lives in the bastion's
// namespace, so the host is reachable only through the bastion, as a private
// instance is reachable only through a jump host. HostAddr is then the
// bastion's address on that link.
func Behind(bastion *Host) Option { return func(o *options) { o.behind = bastion } }

// WithAuthorizedKey makes sshd accept, besides ClientKeyPEM, the key of an
// authorized_keys-format line: the key pair an EC2 launch names, so a
// simulated instance admits exactly the key the launch gave it.
func WithAuthorizedKey(line string) Option {
	return func(o *options) { o.authorized = append(o.authorized, strings.TrimSpace(line)) }
}

const (
	sshdPath = "/usr/sbin/sshd"
	// allocLock serializes picking a subnet number across test processes
	// (go test runs packages in parallel).
	allocLock = "/run/pgbench-testhost.lock"
	// allocNext holds the N where allocate's next search starts.
	allocNext = "/run/pgbench-testhost-next"
)

// New creates a test host and tears it down in t.Cleanup. It skips (or
// fails, see Skip) without root, ip or sshd.
func New(t testing.TB, opts ...Option) *Host {
	t.Helper()
	o := options{sshd: true}
	for _, f := range opts {
		f(&o)
	}
	RequireRoot(t)
	ipPath := RequireCommand(t, "ip", "/usr/sbin", "/sbin")
	if o.loginUser != "" {
		RequireCommand(t, "sudo", "/usr/bin")
		RequireCommand(t, "useradd", "/usr/sbin", "/sbin")
	}
	if o.sshd {
		if _, err := os.Stat(sshdPath); err != nil {
			Skip(t, "needs %s (Debian package openssh-server)", sshdPath)
		}
	}

	n, err := allocate(ipPath)
	if err != nil {
		t.Fatalf("create test host namespace: %v", err)
	}
	h := &Host{
		Addr:      fmt.Sprintf("10.200.%d.2", n),
		HostAddr:  fmt.Sprintf("10.200.%d.1", n),
		Port:      22,
		User:      "root",
		Namespace: fmt.Sprintf("pgbt-%d", n),
		Dir:       t.TempDir(),
	}
	hostVeth, nsVeth := fmt.Sprintf("pgbt%dh", n), fmt.Sprintf("pgbt%dn", n)
	// onHostSide runs an ip command where the near end of the link lives:
	// the test machine, or the bastion's namespace for a host Behind one.
	var hostSide []string
	if o.behind != nil {
		hostSide = []string{"-n", o.behind.Namespace}
	}
	onHostSide := func(args ...string) []string { return append(append([]string{}, hostSide...), args...) }
	h.behind = o.behind
	h.extraAuthz = o.authorized
	h.loginUser, h.loginKey, h.LoginUser = o.loginUser, o.loginKey, o.loginUser
	// dropUser unregisters the host from its login user's account, after
	// the namespace's processes (its sessions) are killed.
	var dropUser func()
	t.Cleanup(func() {
		// Processes still in the namespace (sshd sessions) would keep it
		// alive; kill them before deleting it.
		if out, err := exec.Command(ipPath, "netns", "pids", h.Namespace).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		exec.Command(ipPath, onHostSide("link", "del", hostVeth)...).Run()
		if out, err := exec.Command(ipPath, "netns", "del", h.Namespace).CombinedOutput(); err != nil {
			t.Errorf("delete namespace %s: %v: %s", h.Namespace, err, out)
		}
		if dropUser != nil {
			dropUser()
		}
	})
	if o.loginUser != "" {
		dropUser = addLoginUser(t, o.loginUser, h.Namespace)
	}
	steps := [][]string{
		{"link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth},
		{"link", "set", nsVeth, "netns", h.Namespace},
	}
	if o.behind != nil {
		steps = append(steps, []string{"link", "set", hostVeth, "netns", o.behind.Namespace})
	}
	steps = append(steps, [][]string{
		onHostSide("addr", "add", h.HostAddr+"/24", "dev", hostVeth),
		onHostSide("link", "set", hostVeth, "up"),
		{"-n", h.Namespace, "addr", "add", h.Addr + "/24", "dev", nsVeth},
		{"-n", h.Namespace, "link", "set", nsVeth, "up"},
		{"-n", h.Namespace, "link", "set", "lo", "up"},
	}...)
	for _, s := range steps {
		if out, err := exec.Command(ipPath, s...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	h.makeKeys(t)
	if o.sshd {
		h.startSSHD(t, ipPath)
	}
	return h
}

// allocate picks a free N and creates namespace pgbt-N. The namespace
// file under /run/netns is the claim; the flock only keeps two processes
// from racing for the same N. The search starts after the N allocated
// last, by any process (allocNext), so that a name comes back only after
// every other N had its turn: a test that checks that the namespace of a
// host it tore down is gone must not find another test's new host under
// the same name (make test runs lanes side by side).
func allocate(ipPath string) (int, error) {
	unlock, err := lockAlloc()
	if err != nil {
		return 0, err
	}
	defer unlock()
	start := 1
	if b, err := os.ReadFile(allocNext); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 1 && n < 255 {
			start = n
		}
	}
	for i := 0; i < 254; i++ {
		n := (start-1+i)%254 + 1
		ns := fmt.Sprintf("pgbt-%d", n)
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			continue
		}
		// A leftover veth from a crashed run would make this N unusable.
		if _, err := net.InterfaceByName(fmt.Sprintf("pgbt%dh", n)); err == nil {
			continue
		}
		out, err := exec.Command(ipPath, "netns", "add", ns).CombinedOutput()
		if err == nil {
			if err := os.WriteFile(allocNext, []byte(strconv.Itoa(n%254+1)), 0o600); err != nil {
				return 0, fmt.Errorf("record the next test host number: %w", err)
			}
			return n, nil
		}
		if !bytes.Contains(out, []byte("exists")) {
			return 0, fmt.Errorf("ip netns add %s: %v: %s", ns, err, out)
		}
	}
	return 0, fmt.Errorf("no free 10.200.N.0/24 subnet for a test host (stale pgbt-* namespaces? see ip netns list)")
}

// StartSSHD starts the sshd of a host made WithoutSSHD, as a slow boot
// brings sshd up long after the machine got its address. Its cleanups are
// t's, like those of New.
func (h *Host) StartSSHD(t testing.TB) {
	t.Helper()
	ipPath := RequireCommand(t, "ip", "/usr/sbin", "/sbin")
	if h.logPath != "" {
		t.Fatalf("sshd of %s is already started", h.Namespace)
	}
	h.startSSHD(t, ipPath)
}

// lockAlloc takes allocLock, which serializes changes to what test hosts
// share across test processes (subnet numbers, login accounts).
func lockAlloc() (unlock func(), err error) {
	f, err := os.OpenFile(allocLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", allocLock, err)
	}
	lock, err := filelock.Wait(f, filelock.Exclusive)
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { lock.Close() }, nil
}

// makeKeys draws the host's keys: its host key exists from the first boot
// on, before any sshd runs (cloud-init prints it to the console then), and
// the client key the test logs in with.
func (h *Host) makeKeys(t testing.TB) {
	t.Helper()
	hostPub, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate host key: %v", err)
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate client key: %v", err)
	}
	h.hostKeyPEM = marshalKey(t, hostPriv)
	h.ClientKeyPEM = marshalKey(t, clientPriv)
	hpk, _ := ssh.NewPublicKey(hostPub)
	cpk, _ := ssh.NewPublicKey(clientPub)
	h.HostKeyLine = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hpk)))
	h.HostKeyFingerprint = ssh.FingerprintSHA256(hpk)
	h.clientKeyLine = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cpk)))
}

func (h *Host) startSSHD(t testing.TB, ipPath string) {
	t.Helper()
	hostKeyFile := filepath.Join(h.Dir, "ssh_host_ed25519_key")
	var authKeys string
	cfgFile := filepath.Join(h.Dir, "sshd_config")
	write(t, hostKeyFile, h.hostKeyPEM, 0o600)
	// sshd reads a user's keys as that user: the keys live in a directory
	// every account can traverse, each file owned by its user.
	keysDir, err := os.MkdirTemp("", "pgbt-keys-")
	if err != nil {
		t.Fatalf("create keys directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(keysDir) })
	if err := os.Chmod(keysDir, 0o711); err != nil {
		t.Fatalf("chmod %s: %v", keysDir, err)
	}
	authKeys = filepath.Join(keysDir, "authorized_keys.%u")
	for u, lines := range h.authorizedKeys(h.clientKeyLine) {
		p := filepath.Join(keysDir, "authorized_keys."+u)
		write(t, p, []byte(lines), 0o600)
		if u != "root" {
			ownBy(t, p, u)
		}
	}
	cfg := h.sshdConfig(hostKeyFile, authKeys)
	write(t, cfgFile, []byte(cfg), 0o600)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("create /run/sshd: %v", err)
	}

	// The log goes to a file, not a pipe: session processes inherit it, and
	// a pipe held open by them would make Wait hang.
	logf, err := os.Create(filepath.Join(h.Dir, "sshd.log"))
	if err != nil {
		t.Fatalf("create sshd log: %v", err)
	}
	defer logf.Close()
	h.logPath = logf.Name()
	cmd := exec.Command(ipPath, "netns", "exec", h.Namespace, sshdPath, "-D", "-e", "-f", cfgFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd in %s: %v", h.Namespace, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sshd log of %s:\n%s", h.Namespace, h.SSHDLog())
		}
	})

	addr := net.JoinHostPort(h.Addr, strconv.Itoa(h.Port))
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := h.probe(addr)
		if err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("sshd in %s exited at start:\n%s", h.Namespace, h.SSHDLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd in %s does not accept connections on %s: %v\n%s", h.Namespace, addr, err, h.SSHDLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sshdConfig is the test sshd's configuration.
//
// SetEnv SHLVL=1: Debian's bash sources the user's ~/.bashrc for every
// command sshd runs through it (bash -c, at shell level 1), so each
// command a test sends pays for whatever this machine's root account
// starts there (a pyenv init here: 1-2 s a command, most of an SSH
// test's time). At level 2 bash leaves it out, as it does for a
// command run from a shell. The commands and what they run are the
// same; only that account's interactive setup is skipped.
func (h *Host) sshdConfig(hostKeyFile, authKeys string) string {
	return fmt.Sprintf(`ListenAddress %s
ListenAddress 127.0.0.1
Port %d
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
MaxSessions 100
MaxStartups 100
SetEnv SHLVL=1
LogLevel VERBOSE
Subsystem sftp internal-sftp
`, h.Addr, h.Port, hostKeyFile, authKeys, filepath.Join(h.Dir, "sshd.pid"))
}

// probe checks that sshd accepts connections on addr. A host behind a
// bastion cannot be dialled from here; its sshd's own "listening" line,
// written once the socket is bound, stands in.
func (h *Host) probe(addr string) error {
	if h.behind != nil {
		if strings.Contains(h.SSHDLog(), "Server listening on "+h.Addr+" port "+strconv.Itoa(h.Port)) {
			return nil
		}
		return fmt.Errorf("sshd has not logged that it listens on %s yet", addr)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// SSHDLog returns what sshd logged so far (LogLevel VERBOSE).
func (h *Host) SSHDLog() string {
	b, _ := os.ReadFile(h.logPath)
	return string(b)
}

// Exec runs args inside the host's network namespace and returns the
// combined output; it fails the test when the command fails.
func (h *Host) Exec(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Namespace}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %s: %v: %s", h.Namespace, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Pids lists the processes running in the host's network namespace (the
// sshd and its sessions and their children).
func (h *Host) Pids(t testing.TB) []int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.Namespace).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", h.Namespace, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func marshalKey(t testing.TB, k ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := ssh.MarshalPrivateKey(k, "")
	if err != nil {
		t.Fatalf("marshal key: %v", err)
	}
	return pem.EncodeToMemory(b)
}

func write(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}
