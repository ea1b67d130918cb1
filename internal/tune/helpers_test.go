package tune

// Test helpers that more than one test file uses.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fakeHost writes a tree with ncpu cpufreq governors and numa_balancing.
func fakeHost(t *testing.T, ncpu int, governor string) string {
	t.Helper()
	root := t.TempDir()
	w := func(rel, v string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < ncpu; i++ {
		w(fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", i), governor)
	}
	w("proc/sys/kernel/numa_balancing", "1")
	return root
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
