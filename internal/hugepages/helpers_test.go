package hugepages

// Test helpers that more than one test file uses.

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeRoot is a tree where sysfs/procfs files are plain files: a write reads
// back as written, so the whole reserve/release path runs without touching
// the host.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel, v := range map[string]string{
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":   "0\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "0\n",
		"proc/sys/vm/overcommit_memory":                           "0\n",
		"proc/sys/vm/overcommit_ratio":                            "50\n",
		"proc/sys/vm/drop_caches":                                 "",
		"proc/sys/vm/compact_memory":                              "",
	} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
