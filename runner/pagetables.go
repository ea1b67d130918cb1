package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
)

type pagetablesCmd struct{}

func init() { register(pagetablesCmd{}) }

func (pagetablesCmd) Name() string { return "pagetables" }
func (pagetablesCmd) Synopsis() string {
	return "measure page-table memory of N connections touching all of shared_buffers, with and without huge pages"
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
	var ms []string
	for _, m := range strings.Split(*modes, ",") {
		m = strings.TrimSpace(m)
		if m != "on" && m != "off" {
			return o.emit(nil, usagef("--huge-pages %q: want off, on or both", m), nil)
		}
		ms = append(ms, m)
	}
	res, err := hugepages.MeasurePageTables(ctx, hugepages.PageTablesOptions{BinDir: *bin, SharedBuffers: *sb, Connections: *conns, Modes: ms})
	if err != nil {
		return o.emit(nil, fmt.Errorf("pagetables %w", err), nil)
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
