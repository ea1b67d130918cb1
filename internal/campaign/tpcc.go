package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

// TPC-C runs through the same engine as pgbench: the same plan, order,
// restarts, warm-ups, journal and statistics. Only the client differs:
// `pgbench-runner tpcc` (internal/tpcc) in a process of its own, under the
// client's pinning like pgbench, which loads, runs and checks the dataset
// and prints its result as JSON. The verdicts are on NOPM.

// DatasetMismatchError is a data directory holding a TPC-C dataset that
// is not the one the campaign asks for: loading over it would throw away
// what may have taken hours to load, so the campaign stops instead.
type DatasetMismatchError struct {
	Variant string
	DataDir string
	Have    *Stamp
	Want    string
}

func (e *DatasetMismatchError) Error() string {
	return fmt.Sprintf("variant %s: %s holds a TPC-C dataset of %d warehouses loaded by %s on %s, and this campaign asks for %s: remove that directory (or give another --data-dir) to load afresh",
		e.Variant, e.DataDir, e.Have.Warehouses, e.Have.Driver, e.Have.LoadedAt.Format(time.RFC3339), e.Want)
}

// datasetWanted describes the dataset the campaign asks for, in words.
func (c *Config) datasetWanted() string {
	if c.tpcc() {
		return fmt.Sprintf("a TPC-C dataset of %d warehouses loaded by %s", c.Warehouses, tpcc.Version)
	}
	return fmt.Sprintf("a pgbench dataset of scale %d", c.Scale)
}

// sameDataset says the stamped dataset is the one the campaign asks for.
func (c *Config) sameDataset(s *Stamp) bool {
	if c.tpcc() {
		return s.Workload == ModeTPCC && s.Warehouses == c.Warehouses && s.Driver == tpcc.Version
	}
	return s.Workload == "" && s.Scale == c.Scale
}

// guardDataset refuses to load over a TPC-C dataset that is not the one
// asked for.
func (c *Config) guardDataset(vs *variantState, s *Stamp) error {
	if s == nil || s.Workload != ModeTPCC || c.sameDataset(s) {
		return nil
	}
	return &DatasetMismatchError{Variant: vs.Name, DataDir: vs.cluster.DataDir, Have: s, Want: c.datasetWanted()}
}

// stampWorkload records what the campaign loads in a new stamp.
func (c *Config) stampWorkload(s *Stamp) {
	if c.tpcc() {
		s.Workload, s.Warehouses, s.Driver = ModeTPCC, c.Warehouses, tpcc.Version
		return
	}
	s.Scale = c.Scale
}

// tpccOptions are the driver's options against vs.
func (e *engine) tpccOptions(vs *variantState) tpcc.Options {
	return tpcc.Options{Conn: tpcc.Conn{Host: vs.cluster.SocketDir(), Port: 5432, User: "postgres", DB: "postgres"}, Warehouses: e.cfg.Warehouses}
}

// driverCommand is the command of `pgbench-runner tpcc`: TPCCDriver, or
// this executable.
func (e *engine) driverCommand() ([]string, error) {
	if len(e.cfg.TPCCDriver) > 0 {
		return e.cfg.TPCCDriver, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("tpcc: find this executable: %w", err)
	}
	return []string{exe, "tpcc"}, nil
}

// driver runs `pgbench-runner tpcc action` with o against vs and decodes
// its JSON result into v. A measured run or warm-up (pinned) runs under
// the client's prefix and pinning, or on the client host; its command line
// and output are kept in dir, named with prefix name. onStart (may be nil)
// gets the driver's pid when it runs here.
func (e *engine) driver(ctx context.Context, vs *variantState, action string, o tpcc.Options, pinned bool, dir, name string, onStart func(int), v any) (remote.Result, error) {
	drv, err := e.driverCommand()
	if err != nil {
		return remote.Result{}, err
	}
	if pinned && e.client != nil {
		return e.clientDriver(ctx, vs, action, o, drv, dir, name, v)
	}
	var argv []string
	if pinned {
		argv = append(append(argv, e.cfg.ClientPrefix...), e.clientWrap...)
	}
	argv = append(append(argv, drv...), append(o.Args(action), "--json")...)
	cmd := remote.Command{Args: argv, Dir: "/", OnStart: onStart}
	if dir != "" {
		fe, err := os.Create(filepath.Join(dir, name+"stderr"))
		if err != nil {
			return remote.Result{}, fmt.Errorf("create %s: %w", dir, err)
		}
		defer fe.Close()
		cmd.OnStderr = func(line string) { fmt.Fprintln(fe, line) }
		os.WriteFile(filepath.Join(dir, name+"command"), []byte(remote.QuoteArgs(argv)+"\n"), 0o644)
	}
	res, err := remote.RunLocal(ctx, cmd, remote.LocalOptions{})
	if dir != "" {
		os.WriteFile(filepath.Join(dir, name+"stdout"), res.Stdout, 0o644)
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("tpcc %s: %w", action, shortStderr(err, res))
	}
	if err := json.Unmarshal(res.Stdout, v); err != nil {
		return res, fmt.Errorf("tpcc %s: decode its result: %w", action, err)
	}
	return res, nil
}

// loadTPCC loads vs's dataset, with the server running, into stamp.
func (e *engine) loadTPCC(ctx context.Context, vs *variantState, stamp *Stamp) error {
	e.phase("load %s: TPC-C, %d warehouses", vs.Name, e.cfg.Warehouses)
	dir := filepath.Join(e.cfg.OutDir, "load", vs.Name)
	os.RemoveAll(dir)
	if err := mkdirFor(dir); err != nil {
		return err
	}
	var lr tpcc.LoadResult
	if _, err := e.driver(ctx, vs, tpcc.ActionLoad, e.tpccOptions(vs), false, dir, "", nil, &lr); err != nil {
		return fmt.Errorf("variant %s: load: %w", vs.Name, err)
	}
	if !lr.Check.Passed {
		return fmt.Errorf("variant %s: the freshly loaded TPC-C dataset fails its consistency check: %s", vs.Name, strings.Join(lr.Check.Failures, "; "))
	}
	stamp.LoadSeconds, stamp.Bytes, stamp.LoadCheck = lr.Seconds, lr.Bytes, lr.Check
	e.phase("loaded %s: %d warehouses in %.0f s, %d MB; %d consistency conditions hold", vs.Name, lr.Warehouses, lr.Seconds, lr.Bytes>>20, len(lr.Check.Conditions))
	return nil
}

// runTPCC is the driver's run of vs at st.Clients for d, pinned as the
// client; with dir "" it is a warm-up and keeps nothing.
func (e *engine) runTPCC(ctx context.Context, vs *variantState, st Step, d time.Duration, dir, name string, onStart func(int)) (*tpcc.RunResult, remote.Result, error) {
	o := e.tpccOptions(vs)
	o.Clients, o.Duration = st.Clients, d
	var rr tpcc.RunResult
	res, err := e.driver(ctx, vs, tpcc.ActionRun, o, true, dir, name, onStart, &rr)
	if err != nil {
		return nil, res, fmt.Errorf("variant %s, %d clients, iteration %d: %w", vs.Name, st.Clients, st.Iteration, err)
	}
	return &rr, res, nil
}

// tpccRun turns a driver's run into the journal's run.
func tpccRun(rr *tpcc.RunResult) *report.Run {
	l := func(x tpcc.Latency) report.Latency {
		return report.Latency{Avg: x.Avg, P50: x.P50, P95: x.P95, P99: x.P99}
	}
	r := &report.Run{
		TPS: rr.TPM / 60, NOPM: rr.NOPM, TPM: rr.TPM, Types: map[string]report.TxType{}, Seconds: rr.Seconds,
		LatencyMS: l(rr.LatencyMS), Transactions: rr.Transactions, FailedTransactions: rr.Errors, TPSSeries: rr.Series,
	}
	for name, t := range rr.Types {
		r.Types[name] = report.TxType{Count: t.Count, Rollbacks: t.Rollbacks, Errors: t.Errors, LatencyMS: l(t.LatencyMS)}
	}
	d := pgbench.DriftTrend(rr.Series)
	r.DriftPct, r.Drift = d.Pct, d.Drifting
	return r
}

// checkPath is where a variant's consistency check after the campaign's
// runs is kept.
func checkPath(outDir, variant string) string {
	return filepath.Join(outDir, "load", variant, "final-check.json")
}

// finalChecks checks every variant's dataset after the runs, starting each
// server in turn; a condition that does not hold is a warning: the runs
// measured something, but the driver or the server may be wrong.
func (e *engine) finalChecks(ctx context.Context) error {
	for _, vs := range e.vars {
		if err := e.ensure(ctx, vs); err != nil {
			return err
		}
		e.phase("check %s: TPC-C consistency conditions", vs.Name)
		var cr tpcc.CheckResult
		if _, err := e.driver(ctx, vs, tpcc.ActionCheck, e.tpccOptions(vs), false, "", "", nil, &cr); err != nil {
			return fmt.Errorf("variant %s: %w", vs.Name, err)
		}
		if err := mkdirFor(filepath.Dir(checkPath(e.cfg.OutDir, vs.Name))); err != nil {
			return err
		}
		if err := atomicfile.WriteJSON(checkPath(e.cfg.OutDir, vs.Name), &cr, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tpccDatasets reports each variant's dataset: its stamp's load, and the
// checks after the load and after the runs.
func (e *engine) tpccDatasets() *report.TPCC {
	t := &report.TPCC{Driver: tpcc.Version, Datasets: map[string]report.TPCCDataset{}}
	for _, vs := range e.vars {
		var d report.TPCCDataset
		if s, err := readStamp(stampPath(e.cfg.DataDir, vs.Name)); err == nil {
			d.ClonedFrom, d.LoadSeconds, d.Bytes, d.LoadCheck = s.ClonedFrom, s.LoadSeconds, s.Bytes, s.LoadCheck
		}
		var c report.ConsistencyCheck
		if b, err := os.ReadFile(checkPath(e.cfg.OutDir, vs.Name)); err == nil && json.Unmarshal(b, &c) == nil {
			d.FinalCheck = &c
			if !c.Passed {
				e.warn("variant %s: the TPC-C dataset fails its consistency check after the runs: %s", vs.Name, strings.Join(c.Failures, "; "))
			}
		} else if !errors.Is(err, os.ErrNotExist) && err != nil {
			e.warn("variant %s: %v", vs.Name, err)
		}
		t.Datasets[vs.Name] = d
	}
	return t
}
