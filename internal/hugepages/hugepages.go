// Package hugepages sizes, reserves and releases the kernel's huge-page pool
// the safe way: drop caches and compact memory before growing it, read the
// count back, retry once, and put the previous count back on a shortfall so a
// failed reserve never leaves a half-sized pool behind.
package hugepages

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/statefile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// DefaultPageSize is the x86-64 default huge page size, 2 MB.
const DefaultPageSize int64 = 2 << 20

// ParsePageSize parses "2MB", "2M", "1GB", "1G" or a byte count.
func ParsePageSize(s string) (int64, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "2MB", "2M", "2048KB", "":
		return 2 << 20, nil
	case "1GB", "1G", "1024MB":
		return 1 << 30, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("page size %q: want 2MB or 1GB", s)
	}
	return n, nil
}

// SizeName prints a page size as the kernel documents it: "2 MB", "1 GB".
func SizeName(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MB", b>>20)
	default:
		return fmt.Sprintf("%d kB", b>>10)
	}
}

// Plan is the JSON of `pgbench-runner hugepages plan --json`.
type Plan struct {
	Pages                 int64   `json:"pages"`
	PageSizeBytes         int64   `json:"page_size_bytes"`
	Bytes                 int64   `json:"bytes"`
	SharedMemorySizeBytes int64   `json:"shared_memory_size_bytes,omitempty"`
	MemoryFractionOfTotal float64 `json:"memory_fraction_of_total"`
	RemainingBytes        int64   `json:"remaining_bytes"`
}

// PlanPages describes a pool of pages pages of pageSize on a host with
// memTotal bytes.
func PlanPages(pages, pageSize, memTotal int64) Plan {
	b := pages * pageSize
	p := Plan{Pages: pages, PageSizeBytes: pageSize, Bytes: b, RemainingBytes: memTotal - b}
	if memTotal > 0 {
		p.MemoryFractionOfTotal = math.Round(float64(b)/float64(memTotal)*1e4) / 1e4
	}
	return p
}

// PlanFraction sizes a pool to fraction f of memTotal, rounded down to whole
// pages (the seed reserves a quarter of memory).
func PlanFraction(f float64, pageSize, memTotal int64) (Plan, error) {
	if f <= 0 || f >= 1 {
		return Plan{}, fmt.Errorf("memory fraction %v: want a number between 0 and 1", f)
	}
	return PlanPages(int64(f*float64(memTotal))/pageSize, pageSize, memTotal), nil
}

// PlanBytes sizes a pool that holds a segment of size bytes, rounded up.
func PlanBytes(size, pageSize, memTotal int64) Plan {
	p := PlanPages((size+pageSize-1)/pageSize, pageSize, memTotal)
	p.SharedMemorySizeBytes = size
	return p
}

// Kernel reads and writes the pool under Root ("/" on a real host).
type Kernel struct {
	Root string
}

func (k Kernel) root() string {
	if k.Root == "" {
		return "/"
	}
	return k.Root
}

// CountPath is the sysfs file holding the pool size for pageSize, globally
// (node < 0) or on one NUMA node.
func (k Kernel) CountPath(pageSize int64, node int) string {
	dir := fmt.Sprintf("hugepages-%dkB", pageSize>>10)
	if node < 0 {
		return filepath.Join(k.root(), "sys/kernel/mm/hugepages", dir, "nr_hugepages")
	}
	return filepath.Join(k.root(), "sys/devices/system/node", fmt.Sprintf("node%d", node), "hugepages", dir, "nr_hugepages")
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

func writeInt(path string, n int64) error {
	if err := os.WriteFile(path, []byte(strconv.FormatInt(n, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %d to %s: %w", n, path, err)
	}
	return nil
}

// Status reads the global pools, one per page size.
func (k Kernel) Status() ([]sysinfo.HugePool, error) {
	return sysinfo.ReadHugePools(k.root())
}

// pool returns the global pool of pageSize.
func (k Kernel) pool(pageSize int64) (sysinfo.HugePool, error) {
	pools, err := k.Status()
	if err != nil {
		return sysinfo.HugePool{}, err
	}
	for _, p := range pools {
		if p.SizeBytes == pageSize {
			return p, nil
		}
	}
	return sysinfo.HugePool{}, fmt.Errorf("huge page size %s is not supported by this kernel", SizeName(pageSize))
}

// prepare drops the page cache and compacts memory so the kernel can find
// contiguous runs for huge pages; both are best effort.
func (k Kernel) prepare() {
	_ = os.WriteFile(filepath.Join(k.root(), "proc/sys/vm/drop_caches"), []byte("3\n"), 0o200)
	k.compact()
}

func (k Kernel) compact() {
	_ = os.WriteFile(filepath.Join(k.root(), "proc/sys/vm/compact_memory"), []byte("1\n"), 0o200)
}

// ReserveOptions says what pool to reserve.
type ReserveOptions struct {
	Pages     int64
	PageSize  int64 // bytes; 0 means DefaultPageSize
	Node      int   // NUMA node, or -1 for the global pool
	StateFile string
	// Persist writes vm.nr_hugepages to a sysctl.d file so the pool is
	// reserved at boot, before memory fragments (global pool only).
	Persist bool
	// OvercommitRatio, when > 0, sets vm.overcommit_memory=2 and
	// vm.overcommit_ratio to it; the kernel applies the ratio to the memory
	// left outside the pool.
	OvercommitRatio int
}

// Reserved is the JSON of `pgbench-runner hugepages reserve --json`.
type Reserved struct {
	Requested     int64 `json:"requested"`
	Total         int64 `json:"total"`
	Free          int64 `json:"free"`
	Previous      int64 `json:"previous"`
	PageSizeBytes int64 `json:"page_size_bytes"`
	Node          *int  `json:"node,omitempty"`
	// NoState is set by Release when the state file did not exist: nothing
	// was changed and the numbers describe the current default pool.
	NoState bool `json:"no_state,omitempty"`
}

// State is what reserve records so release can undo it.
type State struct {
	Path     string `json:"path"`
	Previous int64  `json:"previous"`
	PageSize int64  `json:"page_size_bytes"`
	Node     int    `json:"node"`
	// Persist is the sysctl.d file reserve wrote and what it held before.
	Persist *FileBackup `json:"persist,omitempty"`
	// Sysctls are the overcommit settings reserve changed.
	Sysctls []FileBackup `json:"sysctls,omitempty"`
}

// FileBackup is a file's previous content; Existed false means remove it.
type FileBackup struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Content string `json:"content"`
}

// ShortfallError reports that the kernel could not give the requested pool.
type ShortfallError struct {
	Requested, Got, PageSize int64
	Restored                 int64
}

func (e *ShortfallError) Error() string {
	return fmt.Sprintf("requested %d pages of %s, the kernel gave %d; the pool was put back to %d pages. "+
		"Memory is too small or too fragmented: reserve the pool earlier (before the page cache fills memory), "+
		"at boot (hugepages=%d on the kernel command line), or ask for fewer pages",
		e.Requested, SizeName(e.PageSize), e.Got, e.Restored, e.Requested)
}

// ErrShortfall matches a *ShortfallError with errors.Is.
var ErrShortfall = errors.New("huge page shortfall")

func (e *ShortfallError) Is(target error) bool { return target == ErrShortfall }

// Reserve sets the pool to opts.Pages and verifies it. The previous count is
// recorded in opts.StateFile first; if a state file already exists, its
// previous count is kept, so reserving twice and releasing once restores the
// count from before the first reserve.
func (k Kernel) Reserve(opts ReserveOptions) (*Reserved, error) {
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Pages < 0 {
		return nil, fmt.Errorf("reserve huge pages: negative page count %d", opts.Pages)
	}
	// Refuse bad extras before the pool changes, not after.
	if opts.Persist && (opts.Node >= 0 || opts.PageSize != DefaultPageSize) {
		return nil, fmt.Errorf("reserve huge pages: --persist covers the global pool of %s pages only", SizeName(DefaultPageSize))
	}
	if opts.OvercommitRatio > 100 {
		return nil, fmt.Errorf("reserve huge pages: overcommit ratio %d: want 1..100", opts.OvercommitRatio)
	}
	if _, err := k.pool(opts.PageSize); err != nil {
		return nil, fmt.Errorf("reserve huge pages: %w", err)
	}
	path := k.CountPath(opts.PageSize, opts.Node)
	cur, err := readInt(path)
	if err != nil {
		return nil, fmt.Errorf("reserve huge pages: %w", err)
	}
	st := State{Path: path, Previous: cur, PageSize: opts.PageSize, Node: opts.Node}
	createdState := false
	if opts.StateFile != "" {
		if old, err := ReadState(opts.StateFile); err == nil {
			if old.Path != path {
				return nil, fmt.Errorf("reserve huge pages: state %s records %s, not %s: release it first or use another state file", opts.StateFile, old.Path, path)
			}
			st = *old
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reserve huge pages: %w", err)
		} else {
			if err := writeState(opts.StateFile, st); err != nil {
				return nil, fmt.Errorf("reserve huge pages: %w", err)
			}
			createdState = true
		}
	}
	got, err := k.setAndRead(path, opts.Pages, cur)
	if err == nil && got < opts.Pages {
		k.compact()
		got, err = k.setAndRead(path, opts.Pages, cur)
	}
	if err == nil && got < opts.Pages {
		// Put the pool back where it was before this call, not half-grown.
		if rerr := writeInt(path, cur); rerr != nil {
			return nil, fmt.Errorf("reserve huge pages: restore after shortfall: %w", rerr)
		}
		restored, _ := readInt(path)
		if createdState {
			_ = os.Remove(opts.StateFile)
		}
		return nil, &ShortfallError{Requested: opts.Pages, Got: got, PageSize: opts.PageSize, Restored: restored}
	}
	if err != nil {
		return nil, fmt.Errorf("reserve huge pages: %w", err)
	}
	if opts.Persist || opts.OvercommitRatio > 0 {
		if err := k.extras(opts, &st); err != nil {
			return nil, fmt.Errorf("reserve huge pages: %w", err)
		}
	}
	r := &Reserved{Requested: opts.Pages, Total: got, Previous: st.Previous, PageSizeBytes: opts.PageSize}
	if opts.Node >= 0 {
		n := opts.Node
		r.Node = &n
		r.Free, _ = readInt(filepath.Join(filepath.Dir(path), "free_hugepages"))
	} else if p, err := k.pool(opts.PageSize); err == nil {
		r.Free = p.Free
	}
	return r, nil
}

// setAndRead writes n to path (preparing memory first when growing) and
// returns what the kernel actually holds afterwards.
func (k Kernel) setAndRead(path string, n, cur int64) (int64, error) {
	if n > cur {
		k.prepare()
	}
	if err := writeInt(path, n); err != nil {
		return 0, err
	}
	return readInt(path)
}

// Release restores the count recorded in stateFile and removes the file. A
// missing state file means there is nothing to undo (released already, or a
// retried destroy): it succeeds without changing anything and reports the
// current pool of the default page size, since without the state the page
// size and node reserve used are unknown.
func (k Kernel) Release(stateFile string) (*Reserved, error) {
	st, err := ReadState(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		p, perr := k.pool(DefaultPageSize)
		if perr != nil {
			return nil, fmt.Errorf("release huge pages: %w", perr)
		}
		return &Reserved{Requested: p.Total, Total: p.Total, Free: p.Free, Previous: p.Total, PageSizeBytes: DefaultPageSize, NoState: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("release huge pages: %w", err)
	}
	before, err := readInt(st.Path)
	if err != nil {
		return nil, fmt.Errorf("release huge pages: %w", err)
	}
	if err := restoreExtras(st); err != nil {
		return nil, fmt.Errorf("release huge pages: %w", err)
	}
	if err := writeInt(st.Path, st.Previous); err != nil {
		return nil, fmt.Errorf("release huge pages: %w", err)
	}
	got, err := readInt(st.Path)
	if err != nil {
		return nil, fmt.Errorf("release huge pages: %w", err)
	}
	if got != st.Previous {
		// Shrinking cannot free pages in use; say so instead of pretending.
		return nil, fmt.Errorf("release huge pages: %s is %d, want %d (pages still in use?)", st.Path, got, st.Previous)
	}
	if err := os.Remove(stateFile); err != nil {
		return nil, fmt.Errorf("release huge pages: remove %s: %w", stateFile, err)
	}
	r := &Reserved{Requested: st.Previous, Total: got, Previous: before, PageSizeBytes: st.PageSize}
	r.Free, _ = readInt(filepath.Join(filepath.Dir(st.Path), "free_hugepages"))
	if st.Node >= 0 {
		n := st.Node
		r.Node = &n
	}
	return r, nil
}

// ReadState reads a state file written by Reserve.
func ReadState(path string) (*State, error) {
	var st State
	if err := statefile.Read(path, &st); err != nil {
		return nil, err
	}
	if st.Path == "" {
		return nil, fmt.Errorf("parse state %s: no path", path)
	}
	return &st, nil
}

func writeState(path string, st State) error {
	return statefile.Write(path, st)
}
