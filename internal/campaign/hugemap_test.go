package campaign

import "testing"

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
	for _, tc := range []struct{ name, smaps, want string }{
		{"4 kB only", normal, "off"},
		{"hugetlb segment", huge, "on"},
		{"empty", "", "off"},
	} {
		if got := hugeMapping(tc.smaps); got != tc.want {
			t.Errorf("%s: hugeMapping = %q, want %q", tc.name, got, tc.want)
		}
	}
}
