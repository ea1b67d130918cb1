package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

type pagetablesCmd struct{}

func init() { register(pagetablesCmd{}) }

func (pagetablesCmd) Name() string { return "pagetables" }
func (pagetablesCmd) Synopsis() string {
	return "measure page-table memory of N connections touching all of shared_buffers, with and without huge pages"
}

// pageTablesRun is one mode's measurement.
type pageTablesRun struct {
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

// pageTablesResult is the JSON of `pgbench-runner pagetables --json`.
type pageTablesResult struct {
	Runs []pageTablesRun `json:"runs"`
	// Ratio is page tables per connection, first mode over last (off/on).
	Ratio float64 `json:"ratio,omitempty"`
}

func (c pagetablesCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	bin := fs.String("bin", "/usr/lib/postgresql/15/bin", "PostgreSQL bin directory")
	sb := fs.String("shared-buffers", "256MB", "shared_buffers")
	conns := fs.Int("connections", 10, "connections, each touching all of shared_buffers")
	modes := fs.String("huge-pages", "off,on", "huge_pages modes to measure, in order")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	sbBytes, err := pgctl.ParseSize(*sb)
	if err != nil || sbBytes < 32<<20 {
		return o.emit(nil, usagef("--shared-buffers %q: want a size of at least 32MB", *sb), nil)
	}
	if *conns < 1 {
		return o.emit(nil, usagef("--connections must be at least 1"), nil)
	}
	var res pageTablesResult
	for _, m := range strings.Split(*modes, ",") {
		m = strings.TrimSpace(m)
		if m != "on" && m != "off" {
			return o.emit(nil, usagef("--huge-pages %q: want off, on or both", m), nil)
		}
		r, err := measurePageTables(ctx, *bin, *sb, sbBytes, *conns, m)
		if err != nil {
			return o.emit(nil, fmt.Errorf("pagetables huge_pages=%s: %w", m, err), nil)
		}
		res.Runs = append(res.Runs, *r)
	}
	if n := len(res.Runs); n > 1 && res.Runs[n-1].PageTablesPerConnectionBytes > 0 {
		res.Ratio = float64(res.Runs[0].PageTablesPerConnectionBytes) / float64(res.Runs[n-1].PageTablesPerConnectionBytes)
	}
	return o.emit(res, nil, func(w io.Writer) {
		for _, r := range res.Runs {
			fmt.Fprintf(w, "huge_pages=%-3s %d connections, shared_buffers %s: page tables %s total, %s per connection (%s idle)\n",
				r.HugePages, r.Connections, sizeString(r.SharedBuffersBytes), sizeString(r.PageTablesTotalBytes),
				sizeString(r.PageTablesPerConnectionBytes), sizeString(r.PageTablesIdleConnectionBytes))
		}
		if res.Ratio > 0 {
			fmt.Fprintf(w, "ratio %s/%s per connection: %.1f\n", res.Runs[0].HugePages, res.Runs[len(res.Runs)-1].HugePages, res.Ratio)
		}
	})
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

func measurePageTables(ctx context.Context, bin, sb string, sbBytes int64, conns int, mode string) (*pageTablesRun, error) {
	settings := map[string]string{
		"shared_buffers":  sb,
		"huge_pages":      mode,
		"max_connections": strconv.Itoa(conns + 10),
		"fsync":           "off",
	}
	cl, cleanup, err := pgctl.Scratch(ctx, bin, settings)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	run := &pageTablesRun{HugePages: mode, Connections: conns, SharedBuffersBytes: sbBytes}
	if mode == "on" {
		sm, err := cl.SharedMemorySize(ctx)
		if err != nil {
			return nil, err
		}
		st := filepath.Join(filepath.Dir(cl.DataDir), "hugepages.json")
		k := hugepages.Kernel{}
		cur, _ := k.Status()
		var have int64
		for _, p := range cur {
			if p.SizeBytes == hugepages.DefaultPageSize {
				have = p.Total
			}
		}
		if _, err := k.Reserve(hugepages.ReserveOptions{Pages: have + sm.HugePages, Node: -1, StateFile: st}); err != nil {
			return nil, err
		}
		defer k.Release(st)
		run.HugePagesReserved = sm.HugePages
	}
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	defer cl.Stop(context.Background())
	// Tables under a quarter of shared_buffers each are read through the
	// buffer pool (bigger ones use a small ring), so scanning them all maps
	// about 80% of shared_buffers into each backend.
	const tables = 8
	pagesPer := sbBytes / 8192 / 10
	var scan strings.Builder
	for i := 0; i < tables; i++ {
		// ~7 rows of 1000 bytes per 8 kB page.
		sql := fmt.Sprintf("CREATE TABLE t%d WITH (fillfactor=100) AS SELECT repeat('x', 1000) AS pad FROM generate_series(1, %d)", i, pagesPer*7)
		if _, err := cl.Psql(ctx, sql); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		fmt.Fprintf(&scan, "SELECT count(*) FROM t%d; ", i)
	}
	if _, err := cl.Psql(ctx, scan.String()); err != nil { // warm the cache once
		return nil, err
	}
	base, err := pageTablesBytes()
	if err != nil {
		return nil, err
	}
	hold := func(sql, tag string) (*exec.Cmd, error) {
		cmd, err := cl.Command(ctx, "psql", cl.PsqlArgs(sql+fmt.Sprintf("SELECT pg_sleep(3600) /* %s */;", tag))...)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		return cmd, cmd.Start()
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			p.Wait()
		}
	}()
	idle, err := hold("", "idle")
	if err != nil {
		return nil, err
	}
	procs = append(procs, idle)
	for i := 0; i < conns; i++ {
		p, err := hold(scan.String(), "touch")
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	// Wait until every backend has finished its scans and sleeps.
	q := "SELECT pid, query LIKE '%/* idle */%' FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
	var rows []string
	deadline := time.Now().Add(10 * time.Minute)
	for {
		out, err := cl.Psql(ctx, q)
		if err != nil {
			return nil, err
		}
		rows = strings.Fields(out)
		if len(rows) == conns+1 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d connections got to sleep", len(rows), conns+1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	after, err := pageTablesBytes()
	if err != nil {
		return nil, err
	}
	var sum int64
	for _, r := range rows {
		pid, isIdle, _ := strings.Cut(r, "|")
		v, err := vmPTE(pid)
		if err != nil {
			return nil, err
		}
		if isIdle == "t" {
			run.PageTablesIdleConnectionBytes = v
		} else {
			sum += v
		}
	}
	run.PageTablesTotalBytes = after - base
	run.PageTablesPerConnectionBytes = sum / int64(conns)
	run.SharedSegmentPerConnection = run.PageTablesPerConnectionBytes - run.PageTablesIdleConnectionBytes
	return run, nil
}
