package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"

	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// executors returns the local executor and an SSH executor to a fresh test
// host, so each behaviour is checked on both.
func executors(t *testing.T) map[string]Executor {
	t.Helper()
	return map[string]Executor{"local": NewLocal(), "ssh": dialHost(t, nil)}
}

func TestRunExitCodesAndStderr(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			res, err := e.Run(ctx, Command{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
			code, ok := IsExit(err)
			if !ok || code != 3 {
				t.Fatalf("err = %v, want exit 3", err)
			}
			if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
				t.Fatalf("result = %d %q %q, want 3 \"out\\n\" \"err\\n\"", res.ExitCode, res.Stdout, res.Stderr)
			}
			if !strings.Contains(err.Error(), "err") {
				t.Fatalf("error %q does not carry the stderr tail", err)
			}

			res, err = e.Run(ctx, Command{Args: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("true: %d, %v", res.ExitCode, err)
			}

			_, err = e.Run(ctx, Command{Args: []string{"/nonexistent/pgbench-no-such-program", "x"}})
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("missing program: err = %#v, want *StartError", err)
			}
			// A program that exists and itself exits 127 is an exit, not a start failure.
			_, err = e.Run(ctx, Command{Args: []string{"sh", "-c", "exit 127"}})
			if code, ok := IsExit(err); !ok || code != 127 {
				t.Fatalf("exit 127: err = %v, want *ExitError 127", err)
			}

			res, err = e.Run(ctx, Command{Args: []string{"sh", "-c", `printf '%s|%s|' "$PGB_A" "$PGB_B"; pwd`},
				Env: map[string]string{"PGB_A": "a b'c", "PGB_B": "$(x)"}, Dir: "/tmp", Stdin: strings.NewReader("")})
			if err != nil || string(res.Stdout) != "a b'c|$(x)|/tmp\n" {
				t.Fatalf("env/dir: %q, %v", res.Stdout, err)
			}
			res, err = e.Run(ctx, Command{Args: []string{"cat"}, Stdin: strings.NewReader("in put\n")})
			if err != nil || string(res.Stdout) != "in put\n" {
				t.Fatalf("stdin: %q, %v", res.Stdout, err)
			}
		})
	}
}

func TestRunStreamsLines(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var lines []string
			first := make(chan time.Time, 1)
			errLines := 0
			start := time.Now()
			res, err := e.Run(context.Background(), Command{
				Args: []string{"sh", "-c", "echo one; echo e1 >&2; sleep 1; echo two"},
				OnStdout: func(l string) {
					mu.Lock()
					defer mu.Unlock()
					if len(lines) == 0 {
						first <- time.Now()
					}
					lines = append(lines, l)
				},
				OnStderr: func(l string) { mu.Lock(); errLines++; mu.Unlock() },
			})
			end := time.Now()
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := strings.Join(lines, ","); got != "one,two" {
				t.Fatalf("lines = %q, want one,two", got)
			}
			if errLines != 1 || string(res.Stderr) != "e1\n" {
				t.Fatalf("stderr lines = %d %q, want 1 \"e1\\n\"", errLines, res.Stderr)
			}
			if f := <-first; end.Sub(f) < 700*time.Millisecond {
				t.Fatalf("first line arrived %s after start, %s before the end; want it before the sleep", f.Sub(start), end.Sub(f))
			}
		})
	}
}

func TestRunCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// sleep takes fractional seconds, so a unique duration is the
			// marker that shows up in the sleeps' command lines.
			marker := "1000." + uniqueMarker(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				// A child in the background and one in the foreground: both
				// must die, not only the direct child.
				_, err := e.Run(ctx, Command{Args: []string{"sh", "-c", `sleep "$0" & sleep "$0"; wait`, marker}})
				done <- err
			}()
			deadline := time.Now().Add(10 * time.Second)
			for countSleeps(t, marker) < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("sleeps with %s never started", marker)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Run after cancel: %v, want context.Canceled", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("Run did not return after cancel")
			}
			waitGone(t, marker, 5*time.Second)
		})
	}
}

func countSleeps(t testing.TB, marker string) int {
	n := 0
	for _, p := range processesWith(t, marker) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if bytes.HasPrefix(b, []byte("sleep\x00")) {
			n++
		}
	}
	return n
}

func TestUploadVerifyAndSkip(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := filepath.Join(t.TempDir(), "sub dir", "file 'x'")
			data := bytes.Repeat([]byte("pgbench\n"), 300000)
			res, err := e.Upload(ctx, bytes.NewReader(data), p, 0o750)
			if err != nil {
				t.Fatalf("Upload: %v", err)
			}
			if res.Skipped || res.Bytes != int64(len(data)) || res.SHA256 != digest.SHA256(data) {
				t.Fatalf("first upload = %+v, want not skipped, %d bytes", res, len(data))
			}
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("content differs after upload (%v)", err)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o750 {
				t.Fatalf("mode = %o, want 750", fi.Mode().Perm())
			}
			res, err = e.Upload(ctx, bytes.NewReader(data), p, 0o640)
			if err != nil || !res.Skipped {
				t.Fatalf("second upload = %+v, %v; want skipped", res, err)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode after skip = %o, want 640", fi.Mode().Perm())
			}
			data2 := append(bytes.Clone(data), '!')
			res, err = e.Upload(ctx, bytes.NewReader(data2), p, 0o600)
			if err != nil || res.Skipped {
				t.Fatalf("changed upload = %+v, %v; want transferred", res, err)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, data2) {
				t.Fatalf("content not replaced")
			}
			ents, _ := os.ReadDir(filepath.Dir(p))
			if len(ents) != 1 {
				t.Fatalf("directory has %d entries, want 1 (temp files left?)", len(ents))
			}
		})
	}
}

// Download streams a file byte for byte, binary and larger than any
// buffer, with its digest; a missing file is an error naming it, and a
// failing writer stops the transfer with the writer's error.
func TestDownload(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := filepath.Join(t.TempDir(), "report 'x'.tar.gz")
			data := make([]byte, 5<<20+3)
			rand.Read(data)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			res, err := Download(ctx, e, p, &buf)
			if err != nil {
				t.Fatalf("Download: %v", err)
			}
			if !bytes.Equal(buf.Bytes(), data) || res.Bytes != int64(len(data)) || res.SHA256 != digest.SHA256(data) {
				t.Fatalf("downloaded %d bytes (%+v), want %d with sha256 %s", buf.Len(), res, len(data), digest.SHA256(data))
			}
			if _, err := Download(ctx, e, p+".missing", io.Discard); err == nil || !strings.Contains(err.Error(), ".missing") {
				t.Fatalf("missing file: %v, want an error naming it", err)
			}
			fail := errors.New("disk full")
			if _, err := Download(ctx, e, p, failingWriter{fail}); !errors.Is(err, fail) {
				t.Fatalf("failing writer: %v, want its error", err)
			}
		})
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestSSHHostKeyMismatchRefused(t *testing.T) {
	t.Parallel()
	a, b := testhost.New(t), testhost.New(t)
	for _, pin := range []string{b.HostKeyLine, b.HostKeyFingerprint} {
		start := time.Now()
		_, err := DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: a.ClientKeyPEM, HostKey: pin, ReachableWithin: 20 * time.Second})
		if err == nil {
			t.Fatalf("dial with the wrong host key %q succeeded", pin)
		}
		var hk *HostKeyError
		if !errors.As(err, &hk) {
			t.Fatalf("err = %v, want *HostKeyError", err)
		}
		if !strings.Contains(err.Error(), a.HostKeyFingerprint) || !strings.Contains(err.Error(), b.HostKeyFingerprint) {
			t.Fatalf("error %q does not name both %s and %s", err, b.HostKeyFingerprint, a.HostKeyFingerprint)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("mismatch took %s: it was retried", d)
		}
	}
	// Fingerprint pin that matches works.
	e, err := DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: a.ClientKeyPEM, HostKey: a.HostKeyFingerprint})
	if err != nil {
		t.Fatalf("dial with the fingerprint pin: %v", err)
	}
	e.Close()
	// No pin and no TOFU is refused before connecting.
	if _, err := DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: a.ClientKeyPEM}); err == nil || !strings.Contains(err.Error(), "no host key") {
		t.Fatalf("dial without a pin: %v, want a no host key error", err)
	}
}

func TestSSHTrustOnFirstUseRecordsFingerprint(t *testing.T) {
	t.Parallel()
	h := testhost.New(t)
	e, err := DialSSH(context.Background(), SSHConfig{Host: h.Addr, PrivateKey: h.ClientKeyPEM, TrustOnFirstUse: true})
	if err != nil {
		t.Fatalf("DialSSH: %v", err)
	}
	defer e.Close()
	if got := e.HostKeyFingerprint(); got != h.HostKeyFingerprint {
		t.Fatalf("recorded fingerprint = %s, want %s", got, h.HostKeyFingerprint)
	}
	if got, want := e.String(), "ssh root@"+h.Addr+":22"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestSSHWrongClientKeyFailsFast(t *testing.T) {
	t.Parallel()
	a, b := testhost.New(t), testhost.New(t)
	start := time.Now()
	_, err := DialSSH(context.Background(), SSHConfig{Host: a.Addr, PrivateKey: b.ClientKeyPEM, HostKey: a.HostKeyLine, ReachableWithin: 30 * time.Second})
	if err == nil {
		t.Fatalf("dial with a foreign client key succeeded")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("err = %v, want an authentication error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("auth failure took %s, want no retries", d)
	}
}

func TestSSHUnreachableFailsWithinDeadline(t *testing.T) {
	t.Parallel()
	h := testhost.New(t, testhost.WithoutSSHD())
	start := time.Now()
	_, err := DialSSH(context.Background(), SSHConfig{Host: h.Addr, PrivateKey: []byte(testKeyPEM(t)), HostKey: "SHA256:x", ReachableWithin: 3 * time.Second, DialTimeout: time.Second})
	d := time.Since(start)
	if err == nil {
		t.Fatalf("dial to a host without sshd succeeded")
	}
	if d > 6*time.Second || d < 2*time.Second {
		t.Fatalf("gave up after %s, want about the 3s deadline (it must retry, then stop)", d)
	}
	for _, want := range []string{h.Addr + ":22", "not reachable within", "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not contain %q", err, want)
		}
	}
}

// TestSSHRetryUntilReachable makes the first attempts fail with
// "connection refused" and opens the port later, the way a booting instance
// behaves: a local port that starts forwarding to the test host's sshd only
// after a while.
func TestSSHRetryUntilReachable(t *testing.T) {
	t.Parallel()
	h := testhost.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close() // refused until reopened below
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr.String())
		if err != nil {
			return
		}
		go func() { <-stop; l.Close() }()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", net.JoinHostPort(h.Addr, "22"))
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	start := time.Now()
	e, err := DialSSH(context.Background(), SSHConfig{Host: "127.0.0.1", Port: addr.Port, PrivateKey: h.ClientKeyPEM, HostKey: h.HostKeyLine, ReachableWithin: 20 * time.Second})
	if err != nil {
		t.Fatalf("DialSSH: %v", err)
	}
	defer e.Close()
	if d := time.Since(start); d < time.Second {
		t.Fatalf("connected after %s, before the port was opened", d)
	}
	if _, err := e.Run(context.Background(), Command{Args: []string{"true"}}); err != nil {
		t.Fatalf("Run after retry: %v", err)
	}
}

func testKeyPEM(t testing.TB) string {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	b, err := ssh.MarshalPrivateKey(k, "")
	if err != nil {
		t.Fatalf("marshal key: %v", err)
	}
	return string(pem.EncodeToMemory(b))
}

func TestSSHBastionHop(t *testing.T) {
	t.Parallel()
	bastion := testhost.New(t)
	// The target is the bastion's own sshd on its namespace-local
	// 127.0.0.1, which the test machine cannot reach directly: a session
	// there proves the hop, and SSH_CONNECTION names 127.0.0.1 as client.
	cfg := SSHConfig{
		Host: "127.0.0.1", PrivateKey: bastion.ClientKeyPEM, HostKey: bastion.HostKeyLine,
		Bastion: &SSHConfig{Host: bastion.Addr, PrivateKey: bastion.ClientKeyPEM, HostKey: bastion.HostKeyFingerprint},
	}
	e, err := DialSSH(context.Background(), cfg)
	if err != nil {
		t.Fatalf("DialSSH via bastion: %v", err)
	}
	defer e.Close()
	res, err := e.Run(context.Background(), Command{Args: []string{"sh", "-c", `echo "$SSH_CONNECTION"`}})
	if err != nil {
		t.Fatalf("Run via bastion: %v", err)
	}
	f := strings.Fields(string(res.Stdout))
	if len(f) != 4 || f[0] != "127.0.0.1" || f[2] != "127.0.0.1" {
		t.Fatalf("SSH_CONNECTION = %q, want client 127.0.0.1 (through the bastion)", res.Stdout)
	}
	direct := dialHost(t, bastion)
	res, err = direct.Run(context.Background(), Command{Args: []string{"sh", "-c", `echo "$SSH_CONNECTION"`}})
	if err != nil || !strings.HasPrefix(string(res.Stdout), bastion.HostAddr+" ") {
		t.Fatalf("direct SSH_CONNECTION = %q, %v; want client %s", res.Stdout, err, bastion.HostAddr)
	}
	if !strings.Contains(bastion.SSHDLog(), "from 127.0.0.1") {
		t.Fatalf("sshd log does not show a login from 127.0.0.1:\n%s", bastion.SSHDLog())
	}
}

func TestSSHSudoPrefix(t *testing.T) {
	yes := true
	e := &SSHExecutor{sudo: yes}
	got := e.remoteCommand(Command{Args: []string{"id", "-u"}, Env: map[string]string{"A": "1 2"}, Dir: "/d x"})
	want := "cd '/d x' && sudo -n env 'A=1 2' setsid -w sh -c " + Quote(wrapper) + " sh id -u"
	if got != want {
		t.Fatalf("remoteCommand = %q, want %q", got, want)
	}
}

// TestSSHBastionSecondHost reaches a host that the test machine has no route
// to, through a second host that does: the jump-host setup of a private
// benchmark instance.
func TestSSHBastionSecondHost(t *testing.T) {
	t.Parallel()
	bastion := testhost.New(t)
	target := testhost.New(t, testhost.Behind(bastion))

	direct := SSHConfig{Host: target.Addr, PrivateKey: target.ClientKeyPEM, HostKey: target.HostKeyLine, DialTimeout: time.Second}
	if e, err := DialSSH(context.Background(), direct); err == nil {
		e.Close()
		t.Fatalf("dialled %s directly; want it reachable only through the bastion", target.Addr)
	}

	cfg := direct
	cfg.DialTimeout = 0
	cfg.Bastion = &SSHConfig{Host: bastion.Addr, PrivateKey: bastion.ClientKeyPEM, HostKey: bastion.HostKeyFingerprint}
	e, err := DialSSH(context.Background(), cfg)
	if err != nil {
		t.Fatalf("DialSSH through the bastion: %v", err)
	}
	defer e.Close()
	res, err := e.Run(context.Background(), Command{Args: []string{"sh", "-c", `echo "$SSH_CONNECTION"`}})
	if err != nil {
		t.Fatalf("Run through the bastion: %v", err)
	}
	f := strings.Fields(string(res.Stdout))
	if len(f) != 4 || f[0] != target.HostAddr || f[2] != target.Addr {
		t.Fatalf("SSH_CONNECTION = %q, want client %s (the bastion's side of the private link) and server %s", res.Stdout, target.HostAddr, target.Addr)
	}
}

// A cancelled command gets KillGrace to finish its own SIGTERM handling
// (pgbench-runner ab stops its servers then); without it, the default grace
// ends in SIGKILL before a slow handler is done.
func TestRunCancelHonoursKillGrace(t *testing.T) {
	t.Parallel()
	for name, e := range executors(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				grace    time.Duration
				wantDone bool
			}{{0, false}, {12 * time.Second, true}} {
				dir := t.TempDir()
				os.Chmod(dir, 0o777)
				flag := filepath.Join(dir, "stopped")
				ready := filepath.Join(dir, "ready")
				// The handler takes 6 s: far past the default grace (2 s) even
				// when a loaded host is slow to deliver the SIGKILL.
				script := `trap 'sleep 6; touch "$1"; exit 0' TERM; touch "$2"; while :; do sleep 0.1; done`
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := e.Run(ctx, Command{Args: []string{"sh", "-c", script, "sh", flag, ready}, KillGrace: tc.grace})
					done <- err
				}()
				deadline := time.Now().Add(10 * time.Second)
				for {
					if _, err := os.Stat(ready); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("grace %v: command never started", tc.grace)
					}
					time.Sleep(20 * time.Millisecond)
				}
				cancel()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("grace %v: Run did not return after cancel", tc.grace)
				}
				time.Sleep(7 * time.Second) // a surviving handler would finish by now
				_, err := os.Stat(flag)
				if got := err == nil; got != tc.wantDone {
					t.Errorf("grace %v: handler finished = %v, want %v", tc.grace, got, tc.wantDone)
				}
				cancel()
			}
		})
	}
}
