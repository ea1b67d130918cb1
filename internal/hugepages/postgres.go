package hugepages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// PlanForPostgres sizes a pool of pageSize pages for the shared memory
// segment PostgreSQL in binDir allocates with settings, on a host with
// memTotal bytes. It asks the server itself, in a scratch data directory,
// because the segment is larger than shared_buffers (buffer descriptors, WAL
// buffers and lock tables live there too); this needs PostgreSQL 15 or later.
// settings may set huge_page_size; otherwise it is pageSize.
func PlanForPostgres(ctx context.Context, binDir string, settings map[string]string, pageSize, memTotal int64) (Plan, error) {
	all := map[string]string{"huge_page_size": fmt.Sprintf("%dkB", pageSize>>10)}
	for k, v := range settings {
		all[k] = v
	}
	c, cleanup, err := pgctl.Scratch(ctx, binDir, all)
	if err != nil {
		return Plan{}, fmt.Errorf("plan for PostgreSQL in %s: %w", binDir, err)
	}
	defer cleanup()
	sm, err := c.SharedMemorySize(ctx)
	if err != nil {
		return Plan{}, fmt.Errorf("plan for PostgreSQL in %s: %w", binDir, err)
	}
	p := PlanBytes(sm.Bytes, pageSize, memTotal)
	if sm.HugePages > 0 && sm.HugePages != p.Pages {
		// Trust the server's own count: it is what it will map.
		p = PlanPages(sm.HugePages, pageSize, memTotal)
		p.SharedMemorySizeBytes = sm.Bytes
	}
	return p, nil
}

// ServerStatus says whether the running server of c has its shared memory
// in huge pages: "on" or "off". PostgreSQL 17 and later answer themselves
// (SHOW huge_pages_status, which may also say "unknown"); for older servers
// it reads the postmaster's memory mappings.
func ServerStatus(ctx context.Context, c *pgctl.Cluster) (string, error) {
	if st, ok, err := c.HugePagesStatus(ctx); err == nil && ok {
		return st, nil
	}
	return postmasterStatus(c.DataDir)
}

// postmasterStatus says whether the postmaster serving dataDir maps any
// memory with pages larger than the base page size ("on") or not ("off"),
// from /proc/PID/smaps. It asks the process itself because the pool
// counters in /proc/meminfo are machine-wide: another process taking or
// returning pages at the same moment would fool a before/after comparison.
func postmasterStatus(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return "", fmt.Errorf("read postmaster.pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return "", fmt.Errorf("postmaster.pid in %s has no pid", dataDir)
	}
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return "", fmt.Errorf("read mappings of postmaster %d: %w", pid, err)
	}
	return hugeMapping(string(smaps)), nil
}

// hugeMapping returns "on" when an smaps listing has a mapping whose kernel
// page size exceeds the base page size (hugetlb), else "off".
func hugeMapping(smaps string) string { return hugeMappingBase(smaps, int64(os.Getpagesize()/1024)) }

// hugeMappingBase is hugeMapping for a base page size of baseKB: kernels
// with 16 or 64 kB pages (arm64, ppc64le) must not count those as huge.
func hugeMappingBase(smaps string, baseKB int64) string {
	for _, line := range strings.Split(smaps, "\n") {
		rest, ok := strings.CutPrefix(line, "KernelPageSize:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 0 {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > baseKB {
				return "on"
			}
		}
	}
	return "off"
}

// Counters are the default pool's counts as /proc/meminfo shows them.
type Counters struct {
	Total, Free, Reserved int64
}

// ReadCounters returns the default pool's counts, zero when /proc/meminfo
// cannot be read: they only explain a failure in messages.
func ReadCounters() Counters {
	m, err := sysinfo.ParseMeminfo("/proc/meminfo")
	if err != nil {
		return Counters{}
	}
	return Counters{Total: m["HugePages_Total"], Free: m["HugePages_Free"], Reserved: m["HugePages_Rsvd"]}
}
