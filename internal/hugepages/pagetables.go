package hugepages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// PageTablesOptions says what MeasurePageTables measures.
type PageTablesOptions struct {
	// BinDir holds the PostgreSQL to start.
	BinDir string
	// SharedBuffers is shared_buffers as PostgreSQL writes it ("256MB").
	SharedBuffers string
	// Connections each touch all of shared_buffers.
	Connections int
	// Modes are the huge_pages values to measure, in order: "off", "on".
	Modes []string
}

// PageTablesRun is one huge_pages mode's measurement.
type PageTablesRun struct {
	HugePages                    string `json:"huge_pages"`
	Connections                  int    `json:"connections"`
	SharedBuffersBytes           int64  `json:"shared_buffers_bytes"`
	PageTablesTotalBytes         int64  `json:"page_tables_total_bytes"`
	PageTablesPerConnectionBytes int64  `json:"page_tables_per_connection_bytes"`
	// PageTablesIdleConnectionBytes is VmPTE of a backend that touched no
	// buffers: its private cost, so the rest of the per-connection figure is
	// what mapping the shared segment costs.
	PageTablesIdleConnectionBytes int64 `json:"page_tables_idle_connection_bytes"`
	SharedSegmentPerConnection    int64 `json:"page_tables_shared_segment_per_connection_bytes"`
	HugePagesReserved             int64 `json:"huge_pages_reserved,omitempty"`
}

// PageTablesResult is the JSON of `pgbench-runner pagetables --json`.
type PageTablesResult struct {
	Runs []PageTablesRun `json:"runs"`
	// Ratio is page tables per connection, first mode over last (off/on).
	Ratio float64 `json:"ratio,omitempty"`
}

// MeasurePageTables measures, for each mode in turn, the page-table memory
// of opts.Connections backends of a scratch server that each touch all of
// shared_buffers. For huge_pages=on it reserves the pages the server needs
// on top of the current pool and releases them afterwards.
func MeasurePageTables(ctx context.Context, opts PageTablesOptions) (*PageTablesResult, error) {
	sbBytes, err := pgctl.ParseSize(opts.SharedBuffers)
	if err != nil {
		return nil, fmt.Errorf("shared_buffers: %w", err)
	}
	var res PageTablesResult
	for _, m := range opts.Modes {
		if m != "on" && m != "off" {
			return nil, fmt.Errorf("huge_pages %q: want off or on", m)
		}
		r, err := measurePageTables(ctx, opts, sbBytes, m)
		if err != nil {
			return nil, fmt.Errorf("huge_pages=%s: %w", m, err)
		}
		res.Runs = append(res.Runs, *r)
	}
	if n := len(res.Runs); n > 1 && res.Runs[n-1].PageTablesPerConnectionBytes > 0 {
		res.Ratio = float64(res.Runs[0].PageTablesPerConnectionBytes) / float64(res.Runs[n-1].PageTablesPerConnectionBytes)
	}
	return &res, nil
}

func pageTablesBytes() (int64, error) {
	m, err := sysinfo.ParseMeminfo("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return m["PageTables"], nil
}

// vmPTE reads a process's page-table size from /proc/PID/status.
func vmPTE(pid string) (int64, error) {
	p := filepath.Join("/proc", pid, "status")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmPTE:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s VmPTE: %w", p, err)
			}
			return n * 1024, nil
		}
	}
	return 0, fmt.Errorf("%s has no VmPTE", p)
}

// measurePageTables starts a scratch server with huge_pages=mode, fills
// shared_buffers from tables it makes, and holds opts.Connections
// connections that have touched it (and one idle one) while it reads the
// page tables they take.
func measurePageTables(ctx context.Context, opts PageTablesOptions, sbBytes int64, mode string) (*PageTablesRun, error) {
	conns := opts.Connections
	settings := map[string]string{
		"shared_buffers":  opts.SharedBuffers,
		"huge_pages":      mode,
		"max_connections": strconv.Itoa(conns + 10),
		"fsync":           "off",
	}
	cl, cleanup, err := pgctl.Scratch(ctx, opts.BinDir, settings)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	run := &PageTablesRun{HugePages: mode, Connections: conns, SharedBuffersBytes: sbBytes}
	if mode == "on" {
		release, pages, err := reserveForServer(ctx, cl)
		if err != nil {
			return nil, err
		}
		defer release()
		run.HugePagesReserved = pages
	}
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	defer cl.Stop(context.Background())
	scan, err := makeScanTables(ctx, cl, sbBytes)
	if err != nil {
		return nil, err
	}
	base, err := pageTablesBytes()
	if err != nil {
		return nil, err
	}
	h := holdConnections(ctx, cl, scan, conns)
	defer h.stop()
	rows, err := h.waitAsleep(ctx)
	if err != nil {
		return nil, err
	}
	after, err := pageTablesBytes()
	if err != nil {
		return nil, err
	}
	if err := run.addPageTables(rows, after-base); err != nil {
		return nil, err
	}
	return run, nil
}

// reserveForServer adds the huge pages cl's server needs to the pool of
// default-size pages, and returns what gives them back and how many.
func reserveForServer(ctx context.Context, cl *pgctl.Cluster) (release func(), pages int64, err error) {
	sm, err := cl.SharedMemorySize(ctx)
	if err != nil {
		return nil, 0, err
	}
	st := filepath.Join(filepath.Dir(cl.DataDir), "hugepages.json")
	k := Kernel{}
	cur, _ := k.Status()
	var have int64
	for _, p := range cur {
		if p.SizeBytes == DefaultPageSize {
			have = p.Total
		}
	}
	if _, err := k.Reserve(ReserveOptions{Pages: have + sm.HugePages, Node: -1, StateFile: st}); err != nil {
		return nil, 0, err
	}
	return func() { k.Release(st) }, sm.HugePages, nil
}

// makeScanTables makes the tables a connection scans to map shared_buffers,
// warms the cache with them once, and returns the scan's SQL. Tables under
// a quarter of shared_buffers each are read through the buffer pool (bigger
// ones use a small ring), so scanning them all maps about 80% of
// shared_buffers into each backend.
func makeScanTables(ctx context.Context, cl *pgctl.Cluster, sbBytes int64) (string, error) {
	const tables = 8
	pagesPer := sbBytes / 8192 / 10
	var scan strings.Builder
	for i := 0; i < tables; i++ {
		// ~7 rows of 1000 bytes per 8 kB page.
		sql := fmt.Sprintf("CREATE TABLE t%d WITH (fillfactor=100) AS SELECT repeat('x', 1000) AS pad FROM generate_series(1, %d)", i, pagesPer*7)
		if _, err := cl.Psql(ctx, sql); err != nil {
			return "", fmt.Errorf("create table: %w", err)
		}
		fmt.Fprintf(&scan, "SELECT count(*) FROM t%d; ", i)
	}
	if _, err := cl.Psql(ctx, scan.String()); err != nil { // warm the cache once
		return "", err
	}
	return scan.String(), nil
}

// heldConnections are psqls that sleep once their scans are done.
type heldConnections struct {
	cl     *pgctl.Cluster
	conns  int
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed chan error
}

// holdConnections opens one idle connection and conns that run scan, each
// then sleeping until stop.
func holdConnections(ctx context.Context, cl *pgctl.Cluster, scan string, conns int) *heldConnections {
	holdCtx, cancel := context.WithCancel(ctx)
	h := &heldConnections{cl: cl, conns: conns, cancel: cancel, failed: make(chan error, conns+1)}
	hold := func(sql, tag string) {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			cmd := cl.Command(nil, "psql", cl.PsqlArgs(sql+fmt.Sprintf("SELECT pg_sleep(3600) /* %s */;", tag))...)
			if _, err := cl.Run(holdCtx, cmd); err != nil && holdCtx.Err() == nil {
				h.failed <- fmt.Errorf("hold a %s connection: %w", tag, err)
			}
		}()
	}
	hold("", "idle")
	for i := 0; i < conns; i++ {
		hold(scan, "touch")
	}
	return h
}

// stop ends every held connection and waits for them.
func (h *heldConnections) stop() {
	h.cancel()
	h.wg.Wait()
}

// waitAsleep waits until every held backend has finished its scans and
// sleeps, and returns their "pid|idle" rows.
func (h *heldConnections) waitAsleep(ctx context.Context) ([]string, error) {
	q := "SELECT pid, query LIKE '%/* idle */%' FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
	deadline := time.Now().Add(10 * time.Minute)
	for {
		select {
		case err := <-h.failed:
			return nil, err
		default:
		}
		out, err := h.cl.Psql(ctx, q)
		if err != nil {
			return nil, err
		}
		rows := strings.Fields(out)
		if len(rows) == h.conns+1 {
			return rows, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d connections got to sleep", len(rows), h.conns+1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// addPageTables records the page tables of the sleeping backends in rows
// ("pid|idle") and the machine's growth in page tables, grown.
func (run *PageTablesRun) addPageTables(rows []string, grown int64) error {
	var sum int64
	for _, r := range rows {
		pid, isIdle, _ := strings.Cut(r, "|")
		v, err := vmPTE(pid)
		if err != nil {
			return err
		}
		if isIdle == "t" {
			run.PageTablesIdleConnectionBytes = v
		} else {
			sum += v
		}
	}
	run.PageTablesTotalBytes = grown
	run.PageTablesPerConnectionBytes = sum / int64(run.Connections)
	run.SharedSegmentPerConnection = run.PageTablesPerConnectionBytes - run.PageTablesIdleConnectionBytes
	return nil
}
