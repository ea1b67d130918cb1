package profile

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// A stripped binary keeps its dynamic symbols, which perf resolves, but not
// its static functions: Debian's postgres has heapgettup_pagemode,
// ExecInterpExpr's helpers and half the executor as [unknown]. Every one of
// them still has an FDE in .eh_frame (for unwinding), and .eh_frame_hdr
// holds a sorted table of their start addresses. Naming an [unknown] frame
// by its DSO and function start ("postgres+0x1b6740") keeps one name per
// function, so samples aggregate as they would with symbols.

// funcStarts are the function start addresses of one ELF file.
type funcStarts struct {
	starts []uint64         // virtual addresses, sorted
	loads  []elf.ProgHeader // PT_LOAD segments, to turn file offsets into addresses
}

// readFuncStarts reads the .eh_frame_hdr search table of the ELF file at path.
func readFuncStarts(path string) (*funcStarts, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".eh_frame_hdr")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .eh_frame_hdr", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: read .eh_frame_hdr: %w", path, err)
	}
	starts, err := parseEhFrameHdr(data, sec.Addr, f.ByteOrder)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fs := &funcStarts{starts: starts}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			fs.loads = append(fs.loads, p.ProgHeader)
		}
	}
	return fs, nil
}

// DWARF pointer encodings that .eh_frame_hdr uses (LSB Core, "DWARF
// Exception Header Encoding").
const (
	dwPEomit    = 0xff
	dwPEudata4  = 0x03
	dwPEsdata4  = 0x0b
	dwPEdatarel = 0x30
)

// parseEhFrameHdr returns the sorted initial locations of the binary search
// table in an .eh_frame_hdr section loaded at addr.
func parseEhFrameHdr(data []byte, addr uint64, bo binary.ByteOrder) ([]uint64, error) {
	if len(data) < 4 || data[0] != 1 {
		return nil, errors.New(".eh_frame_hdr: not version 1")
	}
	ptrEnc, countEnc, tableEnc := data[1], data[2], data[3]
	pos := 4
	switch ptrEnc & 0x0f {
	case 0x03, 0x0b: // 4-byte eh_frame_ptr, any base
		pos += 4
	case 0x04, 0x0c:
		pos += 8
	default:
		if ptrEnc != dwPEomit {
			return nil, fmt.Errorf(".eh_frame_hdr: eh_frame_ptr encoding %#x not supported", ptrEnc)
		}
	}
	if countEnc != dwPEudata4 && countEnc != dwPEsdata4 {
		return nil, fmt.Errorf(".eh_frame_hdr: fde_count encoding %#x not supported", countEnc)
	}
	if tableEnc != dwPEdatarel|dwPEsdata4 {
		return nil, fmt.Errorf(".eh_frame_hdr: table encoding %#x not supported", tableEnc)
	}
	if len(data) < pos+4 {
		return nil, errors.New(".eh_frame_hdr: truncated")
	}
	n := int(bo.Uint32(data[pos:]))
	pos += 4
	if n < 0 || len(data) < pos+8*n {
		return nil, fmt.Errorf(".eh_frame_hdr: %d entries do not fit in %d bytes", n, len(data))
	}
	starts := make([]uint64, n)
	for i := range starts {
		rel := int32(bo.Uint32(data[pos+8*i:]))
		starts[i] = uint64(int64(addr) + int64(rel))
	}
	// The table is sorted by definition; a linker that got it wrong must
	// not break the binary search.
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	return starts, nil
}

// lookup returns the start of the function holding the file offset off,
// as a virtual address.
func (fs *funcStarts) lookup(off uint64) (uint64, bool) {
	addr, ok := off, len(fs.loads) == 0
	for _, p := range fs.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			addr, ok = off-p.Off+p.Vaddr, true
			break
		}
	}
	if !ok {
		return 0, false
	}
	i := sort.Search(len(fs.starts), func(i int) bool { return fs.starts[i] > addr })
	if i == 0 {
		return 0, false
	}
	return fs.starts[i-1], true
}

// unknownNamer names the frames perf could not symbolize, reading each DSO
// once.
type unknownNamer struct {
	files map[string]*funcStarts // nil value: the file could not be read
}

func newUnknownNamer() *unknownNamer { return &unknownNamer{files: map[string]*funcStarts{}} }

// name returns "dso+0xSTART" for the function at file offset off of the DSO
// at path, or "[dso]" when its functions are unknown (a kernel frame, a JIT
// region, a file without .eh_frame_hdr). For a caller frame perf gives the
// return address, which may be the first byte after a call at the very end
// of the function (to a noreturn one), so the caller's address is off-1.
func (u *unknownNamer) name(path string, off uint64, leaf bool) string {
	base := filepath.Base(path)
	if strings.HasPrefix(path, "[") || !filepath.IsAbs(path) {
		return "[" + strings.Trim(base, "[]") + "]"
	}
	fs, seen := u.files[path]
	if !seen {
		fs, _ = readFuncStarts(path)
		u.files[path] = fs
	}
	if fs == nil {
		return "[" + base + "]"
	}
	if !leaf && off > 0 {
		off--
	}
	start, ok := fs.lookup(off)
	if !ok {
		return "[" + base + "]"
	}
	return fmt.Sprintf("%s+%#x", base, start)
}
