package hugepages

import (
	"fmt"
	"os"
	"testing"
)

func TestHugeMapping(t *testing.T) {
	const normal = `55d0c5a4e000-55d0c5a52000 r--p 00000000 fe:01 1835082    /usr/lib/postgresql/15/bin/postgres
Size:                 16 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
7f2b1c000000-7f2b2a000000 rw-s 00000000 00:01 2051     /dev/zero (deleted)
Size:             229376 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
`
	const huge = normal + `7f2b00000000-7f2b0e400000 rw-s 00000000 00:0f 3075     /anon_hugepage (deleted)
Size:             233472 kB
KernelPageSize:     2048 kB
MMUPageSize:        2048 kB
`
	const arm64k = `ffff80000000-ffff8e000000 rw-s 00000000 00:01 2051     /dev/zero (deleted)
Size:             229376 kB
KernelPageSize:       64 kB
MMUPageSize:          64 kB
`
	const arm64kHuge = arm64k + `ffff00000000-ffff20000000 rw-s 00000000 00:0f 3075     /anon_hugepage (deleted)
Size:             524288 kB
KernelPageSize:   524288 kB
MMUPageSize:      524288 kB
`
	for _, tc := range []struct {
		name   string
		smaps  string
		baseKB int64
		want   string
	}{
		{"4 kB only", normal, 4, "off"},
		{"hugetlb segment", huge, 4, "on"},
		{"empty", "", 4, "off"},
		{"64 kB base pages", arm64k, 64, "off"},
		{"64 kB base, hugetlb segment", arm64kHuge, 64, "on"},
		{"64 kB pages on a 4 kB kernel", arm64k, 4, "on"},
	} {
		if got := hugeMappingBase(tc.smaps, tc.baseKB); got != tc.want {
			t.Errorf("%s: hugeMappingBase(base %d kB) = %q, want %q", tc.name, tc.baseKB, got, tc.want)
		}
	}
	// hugeMapping uses this kernel's page size: its own base pages are
	// never huge.
	base := fmt.Sprintf("KernelPageSize:   %d kB\n", os.Getpagesize()/1024)
	if got := hugeMapping(base); got != "off" {
		t.Errorf("hugeMapping(base pages of this kernel) = %q, want off", got)
	}
}
