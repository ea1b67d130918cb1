package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// SSHConfig describes how to reach one host over SSH.
type SSHConfig struct {
	Host string
	Port int    // default 22
	User string // default "root"

	// PrivateKey is a PEM or OpenSSH private key; Passphrase decrypts it.
	// When PrivateKey is empty the ssh-agent at SSH_AUTH_SOCK is used.
	PrivateKey []byte
	Passphrase []byte

	// HostKey pins the host key: an authorized_keys-format line
	// ("ssh-ed25519 AAAA...") or a fingerprint ("SHA256:..."). Empty is an
	// error unless HostKeys is set or TrustOnFirstUse is.
	HostKey string
	// HostKeys pins a set of keys in the same forms, any one of which the
	// host may present: a new instance prints all its key types on its
	// console, and sshd presents only the one the client negotiates.
	HostKeys []string
	// HostKeySource says where the pinned keys were read, for the
	// mismatch error (e.g. "the console of instance i-0abc"); empty
	// reports them as pinned.
	HostKeySource string
	// TrustOnFirstUse accepts whatever key the host presents when HostKey
	// is empty; the executor's HostKeyFingerprint reports it for recording.
	TrustOnFirstUse bool

	// Bastion, when set, is the jump host the connection goes through.
	Bastion *SSHConfig

	// DialTimeout bounds one connection attempt (default 10s).
	DialTimeout time.Duration
	// ReachableWithin keeps retrying a host that does not accept
	// connections yet (a new instance takes minutes) for this long. Zero
	// means a single attempt unless ctx has a deadline, which then bounds
	// the retries.
	ReachableWithin time.Duration
	// KeepaliveInterval is the period of keepalive@openssh.com requests
	// (default 30s); a failed keepalive closes the connection.
	KeepaliveInterval time.Duration

	// Sudo prefixes commands with "sudo -n". nil means: when User is not root.
	Sudo *bool
}

func (c SSHConfig) withDefaults() SSHConfig {
	if c.Port == 0 {
		c.Port = 22
	}
	if c.User == "" {
		c.User = "root"
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = 30 * time.Second
	}
	return c
}

func (c SSHConfig) addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// SSHExecutor runs commands on a host over one SSH connection. Sessions are
// multiplexed on it, so it is safe for concurrent use.
type SSHExecutor struct {
	cfg         SSHConfig
	client      *ssh.Client
	bastion     *SSHExecutor
	sudo        bool
	fingerprint string
	done        chan struct{}
	closeOnce   sync.Once
	sftpMu      sync.Mutex
	sftp        *sftp.Client
}

// HostKeyFingerprint is the SHA256 fingerprint of the key the host
// presented; with TrustOnFirstUse this is what the caller should record.
func (e *SSHExecutor) HostKeyFingerprint() string { return e.fingerprint }

func (e *SSHExecutor) String() string {
	return fmt.Sprintf("ssh %s@%s", e.cfg.User, e.cfg.addr())
}

// Close closes the connection and the bastion connection, if any.
func (e *SSHExecutor) Close() error {
	var err error
	e.closeOnce.Do(func() {
		close(e.done)
		e.sftpMu.Lock()
		if e.sftp != nil {
			e.sftp.Close()
		}
		e.sftpMu.Unlock()
		err = e.client.Close()
		if e.bastion != nil {
			e.bastion.Close()
		}
	})
	return err
}

// HostKeyError is returned when the host presented a key other than the
// pinned one(s). It is never retried.
type HostKeyError struct {
	Addr     string
	Expected string // the pinned fingerprint, several joined by " or "
	Got      string
	// Source is where the pinned keys came from (SSHConfig.HostKeySource).
	Source string
}

func (e *HostKeyError) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("host key mismatch: %s showed %s but the server at %s presented %s", e.Source, e.Expected, e.Addr, e.Got)
	}
	return fmt.Sprintf("host key mismatch for %s: expected %s, host presented %s", e.Addr, e.Expected, e.Got)
}

// permanentError marks dial failures that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// DialSSH connects to cfg.Host, retrying while the host does not accept
// connections (see ReachableWithin). Authentication failures and host key
// mismatches fail at once.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSHExecutor, error) {
	cfg = cfg.withDefaults()
	if cfg.Host == "" {
		return nil, errors.New("ssh: host is empty")
	}
	var bastion *SSHExecutor
	if cfg.Bastion != nil {
		b := *cfg.Bastion
		if b.ReachableWithin == 0 {
			b.ReachableWithin = cfg.ReachableWithin
		}
		var err error
		bastion, err = DialSSH(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("bastion for %s: %w", cfg.addr(), err)
		}
	}
	e, err := dialWithRetry(ctx, cfg, bastion)
	if err != nil {
		if bastion != nil {
			bastion.Close()
		}
		return nil, err
	}
	return e, nil
}

func dialWithRetry(ctx context.Context, cfg SSHConfig, bastion *SSHExecutor) (*SSHExecutor, error) {
	auth, err := authMethods(cfg)
	if err != nil {
		return nil, err
	}
	var fingerprint string
	hostKeyCB, err := hostKeyCallback(cfg, &fingerprint)
	if err != nil {
		return nil, err
	}
	clientCfg := &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            auth,
		HostKeyCallback: hostKeyCB,
		Timeout:         cfg.DialTimeout,
	}

	var deadline time.Time
	if cfg.ReachableWithin > 0 {
		deadline = time.Now().Add(cfg.ReachableWithin)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	start := time.Now()
	var lastErr error
	for attempt := 1; ; attempt++ {
		client, err := dialOnce(ctx, cfg, clientCfg, bastion)
		if err == nil {
			e := &SSHExecutor{cfg: cfg, client: client, bastion: bastion, fingerprint: fingerprint, done: make(chan struct{})}
			e.sudo = cfg.User != "root"
			if cfg.Sudo != nil {
				e.sudo = *cfg.Sudo
			}
			go e.keepalive()
			return e, nil
		}
		var pe *permanentError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("ssh %s@%s: %w", cfg.User, cfg.addr(), pe.err)
		}
		// An attempt the deadline cut short says only that time ran out;
		// the attempt before it knows why the host did not answer.
		if lastErr == nil || !cutShort(ctx, deadline, err) {
			lastErr = err
		}
		wait := time.Duration(attempt) * 500 * time.Millisecond
		if wait > 5*time.Second {
			wait = 5 * time.Second
		}
		if deadline.IsZero() || ctx.Err() != nil {
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		// One last attempt right at the deadline rather than giving up early.
		wait = min(wait, left)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	within := "a single attempt"
	if !deadline.IsZero() {
		within = fmt.Sprintf("%s (deadline %s)", time.Since(start).Round(time.Millisecond), deadline.Format(time.RFC3339))
	}
	return nil, fmt.Errorf("ssh %s@%s: not reachable within %s: %w", cfg.User, cfg.addr(), within, lastErr)
}

// cutShort reports whether a failed attempt ended because ctx was done
// or the retry deadline passed, rather than because of the host.
func cutShort(ctx context.Context, deadline time.Time, err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return false
	}
	return ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline))
}

func dialOnce(ctx context.Context, cfg SSHConfig, clientCfg *ssh.ClientConfig, bastion *SSHExecutor) (*ssh.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if bastion != nil {
		conn, err = bastion.client.DialContext(dctx, "tcp", cfg.addr())
	} else {
		var d net.Dialer
		conn, err = d.DialContext(dctx, "tcp", cfg.addr())
	}
	if err != nil {
		return nil, err
	}
	// The handshake must not hang on a host that accepts TCP but never
	// speaks SSH (sshd still starting, a firewall).
	conn.SetDeadline(time.Now().Add(cfg.DialTimeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, cfg.addr(), clientCfg)
	if err != nil {
		conn.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) || isAuthError(err) {
			return nil, &permanentError{err}
		}
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func isAuthError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unable to authenticate") || strings.Contains(s, "no supported methods remain")
}

func authMethods(cfg SSHConfig) ([]ssh.AuthMethod, error) {
	if len(cfg.PrivateKey) > 0 {
		var signer ssh.Signer
		var err error
		if len(cfg.Passphrase) > 0 {
			signer, err = ssh.ParsePrivateKeyWithPassphrase(cfg.PrivateKey, cfg.Passphrase)
		} else {
			signer, err = ssh.ParsePrivateKey(cfg.PrivateKey)
		}
		if err != nil {
			return nil, fmt.Errorf("parse private key for %s: %w", cfg.addr(), err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, fmt.Errorf("ssh %s: no private key given and SSH_AUTH_SOCK is not set: start ssh-agent, add the key with ssh-add, "+
			"and run Terraform with SSH_AUTH_SOCK set, or give the private key", cfg.addr())
	}
	// The agent connection lives as long as the process; signers are asked
	// for on each attempt so a key added later is seen.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: connect to the ssh-agent at SSH_AUTH_SOCK=%s: %w", cfg.addr(), sock, err)
	}
	ag := agent.NewClient(conn)
	keys, err := ag.List()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s: list the keys of the ssh-agent at SSH_AUTH_SOCK=%s: %w", cfg.addr(), sock, err)
	}
	if len(keys) == 0 {
		conn.Close()
		return nil, fmt.Errorf("ssh %s: the ssh-agent at SSH_AUTH_SOCK=%s holds no keys: add the key with ssh-add", cfg.addr(), sock)
	}
	return []ssh.AuthMethod{ssh.PublicKeysCallback(ag.Signers)}, nil
}

func hostKeyCallback(cfg SSHConfig, seen *string) (ssh.HostKeyCallback, error) {
	var pins []string
	for _, p := range append([]string{cfg.HostKey}, cfg.HostKeys...) {
		if p = strings.TrimSpace(p); p != "" {
			pins = append(pins, p)
		}
	}
	if len(pins) == 0 {
		if !cfg.TrustOnFirstUse {
			return nil, fmt.Errorf("ssh %s: no host key pinned (set HostKey, or TrustOnFirstUse to record it)", cfg.addr())
		}
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			*seen = ssh.FingerprintSHA256(key)
			return nil
		}, nil
	}
	want := map[string]bool{}
	var wantList []string
	for _, pin := range pins {
		fp, err := pinFingerprint(pin)
		if err != nil {
			return nil, fmt.Errorf("parse host key for %s: %w", cfg.addr(), err)
		}
		if !want[fp] {
			want[fp] = true
			wantList = append(wantList, fp)
		}
	}
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		got := ssh.FingerprintSHA256(key)
		*seen = got
		if !want[got] {
			return &HostKeyError{Addr: cfg.addr(), Expected: strings.Join(wantList, " or "), Got: got, Source: cfg.HostKeySource}
		}
		return nil
	}, nil
}

// pinFingerprint is the SHA256 fingerprint a pin stands for: the pin
// itself ("SHA256:...", padding dropped as ssh-keygen prints it) or that
// of an authorized_keys-format key.
func pinFingerprint(pin string) (string, error) {
	if strings.HasPrefix(pin, "SHA256:") {
		return strings.TrimRight(pin, "="), nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pin))
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(key), nil
}

func (e *SSHExecutor) keepalive() {
	t := time.NewTicker(e.cfg.KeepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
			errc := make(chan error, 1)
			go func() {
				_, _, err := e.client.SendRequest("keepalive@openssh.com", true, nil)
				errc <- err
			}()
			select {
			case err := <-errc:
				if err == nil {
					continue
				}
			case <-time.After(e.cfg.KeepaliveInterval):
			case <-e.done:
				return
			}
			// A dead peer: close so every waiting Run fails instead of
			// hanging on a half-open TCP connection.
			e.client.Close()
			return
		}
	}
}

// Markers the wrapper writes as stderr lines; they are removed from the
// output the caller sees.
const (
	pgidMarker     = "pgbench-remote-pgid:"
	notFoundMarker = "pgbench-remote-notfound:"
)

// wrapper runs the command in its own session and process group and reports
// the group id before anything else. Why this design: sshd gives each
// session's shell its own session already, but sudo and the user's login
// shell may fork in between, so the pid sshd knows is not reliably the group
// leader. "setsid -w" makes the sh below the leader of a fresh group
// whatever ran before it, and -w keeps the SSH session open until the
// command ends and passes its exit status through. Knowing the pgid, a
// cancel opens a second session and signals the whole group, which works on
// every OpenSSH version (session signals are often ignored by sshd) and also
// reaches children that detached from the session's pipes. The "command -v"
// check tells "program not found" (a StartError) apart from a program that
// itself exited 127.
const wrapper = `echo "` + pgidMarker + `$$" >&2; command -v "$1" >/dev/null 2>&1 || { echo "` + notFoundMarker + `$1" >&2; exit 127; }; exec "$@"`

// remoteCommand builds the string the remote shell receives. Every piece of
// caller data goes through QuoteArgs.
func (e *SSHExecutor) remoteCommand(c Command) string {
	var argv []string
	if e.sudo {
		argv = append(argv, "sudo", "-n")
	}
	if len(c.Env) > 0 {
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		argv = append(argv, "env")
		for _, k := range keys {
			argv = append(argv, k+"="+c.Env[k])
		}
	}
	argv = append(argv, "setsid", "-w", "sh", "-c", wrapper, "sh")
	argv = append(argv, c.Args...)
	s := QuoteArgs(argv)
	if c.Dir != "" {
		s = "cd " + Quote(c.Dir) + " && " + s
	}
	return s
}

// Run runs c on the host; see Executor.
func (e *SSHExecutor) Run(ctx context.Context, c Command) (Result, error) {
	name := c.String()
	if len(c.Args) == 0 {
		return Result{}, &StartError{Command: name, Err: errors.New("empty command")}
	}
	sess, err := e.client.NewSession()
	if err != nil {
		return Result{}, &StartError{Command: name, Err: fmt.Errorf("open session on %s: %w", e, err)}
	}
	defer sess.Close()

	pgidc := make(chan int, 1)
	var notFound bool
	stdout := &lineWriter{fn: c.OnStdout}
	stderr := &lineWriter{fn: c.OnStderr, filter: func(line string) bool {
		if v, ok := strings.CutPrefix(line, pgidMarker); ok {
			if n, err := strconv.Atoi(v); err == nil {
				select {
				case pgidc <- n:
				default:
				}
				return false
			}
		}
		if strings.HasPrefix(line, notFoundMarker) {
			notFound = true
			return false
		}
		return true
	}}
	sess.Stdout, sess.Stderr = stdout, stderr
	if c.Stdout != nil {
		sess.Stdout = c.Stdout
	}
	sess.Stdin = c.Stdin

	start := time.Now()
	if err := sess.Start(e.remoteCommand(c)); err != nil {
		return Result{}, &StartError{Command: name, Err: fmt.Errorf("start on %s: %w", e, err)}
	}
	waitc := make(chan error, 1)
	go func() { waitc <- sess.Wait() }()

	var werr error
	select {
	case werr = <-waitc:
	case <-ctx.Done():
		e.killGroup(pgidc, waitc, c.killGrace())
		sess.Close()
		werr = <-waitc
	}
	res := Result{Stdout: stdout.finish(), Stderr: stderr.finish(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		res.ExitCode = -1
		return res, fmt.Errorf("%s on %s: %w", name, e, ctx.Err())
	}
	if werr == nil {
		return res, nil
	}
	var ee *ssh.ExitError
	if errors.As(werr, &ee) {
		res.ExitCode = ee.ExitStatus()
		if notFound {
			return res, &StartError{Command: name, Err: fmt.Errorf("%s: command not found on %s", c.Args[0], e)}
		}
		xe := &ExitError{Command: name, ExitCode: res.ExitCode, Stderr: stderrTail(res.Stderr, 2048)}
		if ee.Signal() != "" {
			xe.ExitCode, xe.Signal = -1, ee.Signal()
			res.ExitCode = -1
		}
		return res, xe
	}
	// *ssh.ExitMissingError and I/O errors: the connection, not the
	// command, failed.
	res.ExitCode = -1
	return res, &StartError{Command: name, Err: fmt.Errorf("on %s: %w", e, werr)}
}

// killGroup signals the command's process group from a second session:
// SIGTERM, then SIGKILL after grace if the command is still running.
func (e *SSHExecutor) killGroup(pgidc chan int, waitc chan error, grace time.Duration) {
	var pgid int
	select {
	case pgid = <-pgidc:
	case <-time.After(DefaultKillGrace):
		return // the wrapper never started; closing the session is all we can do
	}
	kill := func(sig string) {
		argv := []string{"kill", "-" + sig, "--", "-" + strconv.Itoa(pgid)}
		if e.sudo {
			argv = append([]string{"sudo", "-n"}, argv...)
		}
		s, err := e.client.NewSession()
		if err != nil {
			return
		}
		defer s.Close()
		s.Run(QuoteArgs(argv))
	}
	kill("TERM")
	select {
	case err := <-waitc:
		waitc <- err // give it back to Run
		// The leader is gone, others in its group may not be.
		kill("KILL")
	case <-time.After(grace):
		kill("KILL")
	}
}

func (e *SSHExecutor) sftpClient() (*sftp.Client, error) {
	e.sftpMu.Lock()
	defer e.sftpMu.Unlock()
	if e.sftp != nil {
		return e.sftp, nil
	}
	c, err := sftp.NewClient(e.client)
	if err != nil {
		return nil, fmt.Errorf("open sftp on %s: %w", e, err)
	}
	e.sftp = c
	return c, nil
}

// remoteSHA256 returns the digest of p on the host, or "" when it cannot be
// read (missing file).
func (e *SSHExecutor) remoteSHA256(ctx context.Context, p string) (string, error) {
	res, err := e.Run(ctx, Command{Args: []string{"sha256sum", "--", p}})
	if err != nil {
		if _, ok := IsExit(err); ok {
			return "", nil
		}
		return "", err
	}
	f := strings.Fields(string(res.Stdout))
	if len(f) == 0 {
		return "", fmt.Errorf("sha256sum %s on %s: empty output", p, e)
	}
	return strings.TrimPrefix(f[0], `\`), nil
}

// Upload writes the content of r to p on the host through sftp: into a
// temporary file in the same directory, chmod, rename, then verifies with
// sha256sum on the host. r is read into memory first because its digest
// decides whether anything is sent at all. When sudo is in use, sftp runs
// as the unprivileged user, so the file is staged in /tmp and moved into
// place with sudo.
func (e *SSHExecutor) Upload(ctx context.Context, r io.Reader, p string, mode fs.FileMode) (UploadResult, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return UploadResult{}, fmt.Errorf("read content for %s: %w", p, err)
	}
	want := digest.SHA256(data)
	res := UploadResult{SHA256: want, Bytes: int64(len(data))}
	got, err := e.remoteSHA256(ctx, p)
	if err != nil {
		return res, fmt.Errorf("upload %s to %s: %w", p, e, err)
	}
	modeStr := strconv.FormatUint(uint64(mode.Perm()), 8)
	if got == want {
		if _, err := e.Run(ctx, Command{Args: []string{"chmod", modeStr, "--", p}}); err != nil {
			return res, fmt.Errorf("upload %s to %s: %w", p, e, err)
		}
		res.Skipped = true
		return res, nil
	}
	sc, err := e.sftpClient()
	if err != nil {
		return res, err
	}
	dir := path.Dir(p)
	suffix := ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	stage := path.Join(dir, "."+path.Base(p)+suffix)
	if e.sudo {
		stage = path.Join("/tmp", ".pgbench-upload-"+path.Base(p)+suffix)
	} else if err := sc.MkdirAll(dir); err != nil {
		return res, fmt.Errorf("create %s on %s: %w", dir, e, err)
	}
	if err := e.writeSFTP(ctx, sc, stage, data, mode); err != nil {
		sc.Remove(stage)
		return res, err
	}
	if e.sudo {
		final := path.Join(dir, "."+path.Base(p)+suffix)
		steps := [][]string{
			{"mkdir", "-p", "--", dir},
			{"cp", "--", stage, final},
			{"chmod", modeStr, "--", final},
			{"mv", "-f", "--", final, p},
		}
		for _, s := range steps {
			if _, err := e.Run(ctx, Command{Args: s}); err != nil {
				sc.Remove(stage)
				e.Run(context.WithoutCancel(ctx), Command{Args: []string{"rm", "-f", "--", final}})
				return res, fmt.Errorf("upload %s to %s: %w", p, e, err)
			}
		}
		sc.Remove(stage)
	} else if err := sc.PosixRename(stage, p); err != nil {
		sc.Remove(stage)
		return res, fmt.Errorf("rename %s to %s on %s: %w", stage, p, e, err)
	}
	got, err = e.remoteSHA256(ctx, p)
	if err != nil {
		return res, fmt.Errorf("verify %s on %s: %w", p, e, err)
	}
	if got != want {
		return res, fmt.Errorf("verify %s on %s: sha256 is %q, want %s", p, e, got, want)
	}
	return res, nil
}

func (e *SSHExecutor) writeSFTP(ctx context.Context, sc *sftp.Client, p string, data []byte, mode fs.FileMode) error {
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("create %s on %s: %w", p, e, err)
	}
	// Write in chunks so a cancel stops a large transfer early.
	const chunk = 1 << 20
	for off := 0; off < len(data); off += chunk {
		if err := ctx.Err(); err != nil {
			f.Close()
			return fmt.Errorf("write %s on %s: %w", p, e, err)
		}
		end := min(off+chunk, len(data))
		if _, err := f.ReadFrom(bytes.NewReader(data[off:end])); err != nil {
			f.Close()
			return fmt.Errorf("write %s on %s: %w", p, e, err)
		}
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s on %s: %w", p, e, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s on %s: %w", p, e, err)
	}
	return nil
}
