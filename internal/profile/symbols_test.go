package profile

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pg15 = "/usr/lib/postgresql/15/bin"

func TestParseEhFrameHdr(t *testing.T) {
	// version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4.
	hdr := []byte{1, 0x1b, 0x03, 0x3b}
	le := binary.LittleEndian
	hdr = le.AppendUint32(hdr, 0x100)
	hdr = le.AppendUint32(hdr, 3)
	for _, rel := range []int32{-0x2000, -0x1000, 0x40} {
		hdr = le.AppendUint32(hdr, uint32(rel))
		hdr = le.AppendUint32(hdr, 0) // FDE address, unused
	}
	got, err := parseEhFrameHdr(hdr, 0x10000, le)
	if err != nil {
		t.Fatalf("parseEhFrameHdr: %v", err)
	}
	want := []uint64{0xe000, 0xf000, 0x10040}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("starts = %#x, want %#x", got, want)
	}
	fs := &funcStarts{starts: got}
	for off, want := range map[uint64]uint64{0xe000: 0xe000, 0xefff: 0xe000, 0x10041: 0x10040} {
		if got, ok := fs.lookup(off); !ok || got != want {
			t.Errorf("lookup(%#x) = %#x, %v, want %#x", off, got, ok, want)
		}
	}
	if _, ok := fs.lookup(0xdfff); ok {
		t.Errorf("lookup before the first function ok = true, want false")
	}
	hdr[3] = 0x1b
	if _, err := parseEhFrameHdr(hdr, 0x10000, le); err == nil {
		t.Errorf("parseEhFrameHdr(table encoding 0x1b) error = nil, want unsupported")
	}
}

// TestFuncStartsPostgres checks the .eh_frame_hdr table of the real,
// stripped postgres against its exported functions: each must start a
// function and its last byte must resolve to that start.
func TestFuncStartsPostgres(t *testing.T) {
	bin := testhost.RequireCommand(t, "postgres", pg15)
	fs, err := readFuncStarts(bin)
	if err != nil {
		t.Fatalf("readFuncStarts: %v", err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var n, bad int
	var example string
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 {
			continue
		}
		n++
		start, ok := fs.lookup(s.Value + s.Size - 1)
		if !ok || start != s.Value {
			bad++
			continue
		}
		if example == "" && s.Size > 16 {
			// postgres' text segment maps file offset = address, as perf reports it.
			if got, want := newUnknownNamer().name(bin, s.Value+8, true), fmt.Sprintf("postgres+%#x", s.Value); got != want {
				t.Errorf("name(%s+8) = %q, want %q", s.Name, got, want)
			}
			example = s.Name
		}
	}
	t.Logf("%d function starts in .eh_frame_hdr; %d exported functions, %d not resolved to their own start", len(fs.starts), n, bad)
	if n < 1000 {
		t.Fatalf("only %d exported functions in %s, want a real postgres", n, bin)
	}
	if bad > n/100 {
		t.Errorf("%d of %d exported functions do not resolve to their start, want at most 1%%", bad, n)
	}
	if got := newUnknownNamer().name("[kernel.kallsyms]", 0xffffffff81000000, true); got != "[kernel.kallsyms]" {
		t.Errorf("name(kernel) = %q, want [kernel.kallsyms]", got)
	}
	if got := newUnknownNamer().name("/nonexistent/libx.so", 0x10, true); got != "[libx.so]" {
		t.Errorf("name(unreadable DSO) = %q, want [libx.so]", got)
	}
}
