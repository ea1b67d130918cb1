package testhost

import (
	"os/exec"
	"testing"
)

// TestPairReachEachOther: the two hosts of a pair reach each other's sshd
// directly, and the test machine reaches both; after cleanup the second
// namespace is gone.
func TestPairReachEachOther(t *testing.T) {
	var second string
	t.Run("pair", func(t *testing.T) {
		a, b := NewPair(t)
		second = b.Namespace
		a.Exec(t, "bash", "-c", "exec 3<>/dev/tcp/"+b.Addr+"/22")
		b.Exec(t, "bash", "-c", "exec 3<>/dev/tcp/"+a.Addr+"/22")
		for _, h := range []*Host{a, b} {
			if err := h.probe(h.Addr + ":22"); err != nil {
				t.Errorf("test machine to %s: %v", h.Addr, err)
			}
		}
	})
	if err := exec.Command("ip", "netns", "exec", second, "true").Run(); err == nil {
		t.Errorf("namespace %s still exists after cleanup", second)
	}
}
