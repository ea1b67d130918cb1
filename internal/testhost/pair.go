package testhost

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// NewPair returns two test hosts on one bridge, so each reaches the other
// directly, as a benchmark server and its client host do: the first is a
// host as New makes it (10.200.N.2), the second a namespace of its own at
// 10.200.N.3 on the same /24, its own sshd and keys. The test machine stays
// at 10.200.N.1, now the bridge's address. Cleanup removes the second
// namespace, its veth and the bridge; the first host cleans up as usual.
func NewPair(t testing.TB, opts ...Option) (first, second *Host) {
	t.Helper()
	first = New(t, opts...)
	if first.behind != nil {
		t.Fatalf("testhost.NewPair: hosts behind a bastion cannot share a bridge")
	}
	ipPath := RequireCommand(t, "ip", "/usr/sbin", "/sbin")
	n := strings.TrimPrefix(first.Namespace, "pgbt-")
	second = &Host{
		Addr:      strings.TrimSuffix(first.Addr, ".2") + ".3",
		HostAddr:  first.HostAddr,
		Port:      22,
		User:      "root",
		Namespace: first.Namespace + "-b",
		Dir:       t.TempDir(),
	}
	bridge, firstVeth := "pgbt"+n+"br", "pgbt"+n+"h"
	hostVeth, nsVeth := "pgbt"+n+"bh", "pgbt"+n+"bn"
	t.Cleanup(func() {
		if out, err := exec.Command(ipPath, "netns", "pids", second.Namespace).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		exec.Command(ipPath, "link", "del", hostVeth).Run()
		exec.Command(ipPath, "link", "del", bridge).Run()
		if out, err := exec.Command(ipPath, "netns", "del", second.Namespace).CombinedOutput(); err != nil {
			t.Errorf("delete namespace %s: %v: %s", second.Namespace, err, out)
		}
	})
	steps := [][]string{
		{"netns", "add", second.Namespace},
		{"link", "add", bridge, "type", "bridge"},
		// The test machine's address moves from the first host's veth to
		// the bridge both veths join.
		{"addr", "del", first.HostAddr + "/24", "dev", firstVeth},
		{"link", "set", firstVeth, "master", bridge},
		{"link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth},
		{"link", "set", nsVeth, "netns", second.Namespace},
		{"link", "set", hostVeth, "master", bridge},
		{"link", "set", hostVeth, "up"},
		{"addr", "add", first.HostAddr + "/24", "dev", bridge},
		{"link", "set", bridge, "up"},
		{"-n", second.Namespace, "addr", "add", second.Addr + "/24", "dev", nsVeth},
		{"-n", second.Namespace, "link", "set", nsVeth, "up"},
		{"-n", second.Namespace, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(ipPath, s...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	second.makeKeys(t)
	second.startSSHD(t, ipPath)
	return first, second
}
