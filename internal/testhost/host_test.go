package testhost

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNewHostsInParallelAndCleanup(t *testing.T) {
	var names []string
	var veths []string
	t.Run("create", func(t *testing.T) {
		a, b := New(t), New(t)
		if a.Addr == b.Addr || a.Namespace == b.Namespace {
			t.Fatalf("two hosts share %s/%s", a.Addr, a.Namespace)
		}
		for _, h := range []*Host{a, b} {
			names = append(names, h.Namespace)
			veths = append(veths, strings.TrimPrefix(h.Namespace, "pgbt-"))
			c, err := net.DialTimeout("tcp", net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), 2*time.Second)
			if err != nil {
				t.Fatalf("dial sshd of %s: %v", h.Namespace, err)
			}
			buf := make([]byte, 4)
			c.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = c.Read(buf)
			c.Close()
			if err != nil || string(buf) != "SSH-" {
				t.Fatalf("banner of %s = %q, %v; want SSH-", h.Namespace, buf, err)
			}
			if got := h.Exec(t, "ip", "-4", "-o", "addr", "show"); !strings.Contains(got, h.Addr+"/24") {
				t.Fatalf("addresses in %s = %q, want %s", h.Namespace, got, h.Addr)
			}
			if !strings.HasPrefix(h.HostKeyFingerprint, "SHA256:") || !strings.HasPrefix(h.HostKeyLine, "ssh-ed25519 ") {
				t.Fatalf("host key %q / %q", h.HostKeyLine, h.HostKeyFingerprint)
			}
			if len(h.Pids(t)) == 0 {
				t.Fatalf("no processes (sshd) in %s", h.Namespace)
			}
		}
	})
	for i, ns := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
			t.Errorf("namespace %s still exists after cleanup (stat err %v)", ns, err)
		}
		if _, err := net.InterfaceByName("pgbt" + veths[i] + "h"); err == nil {
			t.Errorf("veth pgbt%sh still exists after cleanup", veths[i])
		}
	}
}

func TestWithoutSSHDRefuses(t *testing.T) {
	t.Parallel()
	h := New(t, WithoutSSHD())
	_, err := net.DialTimeout("tcp", net.JoinHostPort(h.Addr, "22"), 2*time.Second)
	if err == nil {
		t.Fatalf("dial %s:22 succeeded, want refused", h.Addr)
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial %s:22: %v, want connection refused", h.Addr, err)
	}
}

// A torn-down host's name does not come back at the next host: a test
// that checks that its host's namespace is gone must not find another
// test's new host under the same name.
func TestNamesAreNotReusedAtOnce(t *testing.T) {
	SkipShort(t, "network namespaces")
	var names []string
	for i := 0; i < 2; i++ {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			names = append(names, New(t, WithoutSSHD()).Namespace)
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("two hosts one after the other were named %q, want two names", names)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", names[0])); !os.IsNotExist(err) {
		t.Errorf("namespace %s of the first host after its cleanup: %v, want it gone", names[0], err)
	}
}
