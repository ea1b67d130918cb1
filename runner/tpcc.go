package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

type tpccCmd struct{}

func init() { register(tpccCmd{}) }

func (tpccCmd) Name() string { return "tpcc" }
func (tpccCmd) Synopsis() string {
	return "TPC-C on a running server: load warehouses, run the transaction mix, or check consistency (the engine of ab --mode tpcc)"
}

func (tpccCmd) Actions() []string {
	return []string{tpcc.ActionLoad, tpcc.ActionRun, tpcc.ActionCheck}
}

func (c tpccCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name()+" load|run|check", c.Synopsis(), &o)
	var opts tpcc.Options
	tpcc.BindFlags(fs, &opts)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return o.emit(nil, usagef("want one action: load, run or check"), nil)
	}
	action := fs.Arg(0)
	if err := opts.Validate(action); err != nil {
		return o.emit(nil, usagef("%v", err), nil)
	}
	progress := func(s string) { fmt.Fprintln(o.stderr, s) }
	res, err := tpcc.Do(ctx, action, opts, progress)
	return o.emit(res, err, func(w io.Writer) {
		switch r := res.(type) {
		case *tpcc.LoadResult:
			fmt.Fprintf(w, "loaded %d warehouses in %.1f s (copy %.1f s, indexes %.1f s, vacuum %.1f s), %s\n",
				r.Warehouses, r.Seconds, r.CopySeconds, r.IndexSeconds, r.VacuumSeconds, sizeString(r.Bytes))
			writeCheck(w, r.Check)
		case *tpcc.RunResult:
			fmt.Fprintf(w, "%d virtual users, %d warehouses, %.1f s: NOPM %.0f, TPM %.0f, %d errors\n", r.Clients, r.Warehouses, r.Seconds, r.NOPM, r.TPM, r.Errors)
			for _, name := range tpcc.Types {
				t := r.Types[name]
				fmt.Fprintf(w, "  %-12s %8d  avg %7.2f ms  p95 %7.2f ms  p99 %7.2f ms\n", name, t.Count, t.LatencyMS.Avg, t.LatencyMS.P95, t.LatencyMS.P99)
			}
		case *tpcc.CheckResult:
			writeCheck(w, r)
		}
	})
}

func writeCheck(w io.Writer, c *tpcc.CheckResult) {
	if c.Passed {
		fmt.Fprintf(w, "consistency conditions %s hold (%.1f s)\n", strings.Join(c.Conditions, ", "), c.Seconds)
		return
	}
	fmt.Fprintf(w, "consistency check FAILED:\n  %s\n", strings.Join(c.Failures, "\n  "))
}
