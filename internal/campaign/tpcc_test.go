package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

// tpccConfig is a small TPC-C campaign on PostgreSQL 15 for tests.
func tpccConfig(bin, out string, variants ...Variant) *Config {
	for i := range variants {
		variants[i].BinDir, variants[i].HugePages = bin, "off"
	}
	// Every run starts from a checkpoint and none comes during it: a
	// checkpoint, and the full-page writes after it, would otherwise land
	// in some short runs and not in others.
	return &Config{
		Variants: variants, Settings: map[string]string{"shared_buffers": "128MB", "max_wal_size": "4GB", "checkpoint_timeout": "30min"},
		Mode: ModeTPCC, Warehouses: 1, Clients: []int{4}, Duration: 3 * time.Second, Iterations: 4, Warmup: time.Second,
		CheckpointBefore: true, OutDir: out, Clone: true, TPCCDriver: testDriver(), Counters: true,
	}
}

// TestTPCCCampaign runs TPC-C through the A/B engine with three variants
// on one dataset: an A/A pair, which must find no difference, and
// synchronous_commit = off against on, which must find the faster one on
// NOPM, the verdict's metric. The dataset is loaded once and cloned, its
// consistency conditions hold after the load and after the runs, and the
// results carry NOPM, TPM and every transaction type's latencies.
func TestTPCCCampaign(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	out := scratch(t)
	cfg := tpccConfig(bin, out,
		Variant{Name: "base"}, Variant{Name: "same"},
		Variant{Name: "async", Settings: map[string]string{"synchronous_commit": "off"}})
	// The A/A comparison must not come out significant by chance either.
	// At that level one CI run's six pairs of 4 s missed a 49% gain of
	// asynchronous commit: the interval ran from -6% to +137%, the spread
	// of commits that each wait for the shared disk's flush. Every variant
	// here waits 2 ms before each WAL flush (commit_delay, with
	// commit_siblings 0 so that it always applies), as on a disk whose
	// flush takes that long, so that a synchronous commit's wait is mostly
	// a fixed time; asynchronous commit, which does not wait, gains about
	// threefold: +177% to +200% in four runs here, alone and in make
	// test's quiet lane, no interval's low end under +136%.
	cfg.Alpha = 0.01
	cfg.Settings["commit_delay"], cfg.Settings["commit_siblings"] = "2000", "0"
	cfg.Iterations, cfg.Duration, cfg.Warmup = 6, 3*time.Second, time.Second
	var rec recorder
	start := time.Now()
	res, err := Execute(context.Background(), cfg, rec.on)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	t.Logf("campaign: %.0f s for %d runs", time.Since(start).Seconds(), len(res.Runs))
	if res.Workload.Metric != report.MetricNOPM || res.Workload.Warehouses != 1 {
		t.Errorf("workload metric %q, warehouses %d; want nopm and 1", res.Workload.Metric, res.Workload.Warehouses)
	}
	for _, r := range res.Runs {
		if !(r.NOPM > 0 && r.TPM > r.NOPM) || len(r.Types) != len(tpcc.Types) {
			t.Fatalf("run %d: NOPM %g, TPM %g, %d transaction types; want NOPM > 0, TPM above it, all 5 types", r.Seq, r.NOPM, r.TPM, len(r.Types))
		}
		for _, name := range tpcc.Types {
			if tt := r.Types[name]; tt.Count == 0 || tt.LatencyMS.P95 <= 0 {
				t.Errorf("run %d, %s: %+v; want transactions with latencies", r.Seq, name, tt)
			}
		}
		if r.Client == nil || r.ClientBound {
			t.Errorf("run %d: client %+v, bound %v: want the driver's CPU measured and not saturated", r.Seq, r.Client, r.ClientBound)
		}
	}
	cell := res.Cells[0]
	for _, cmp := range cell.Comparisons {
		b, c := cell.Variants[cmp.Baseline], cell.Variants[cmp.Candidate]
		t.Logf("%s vs %s: NOPM %.0f vs %.0f (TPM %.0f vs %.0f), %+.1f%% [%s], %s",
			cmp.Candidate, cmp.Baseline, c.MedianNOPM, b.MedianNOPM, c.MedianTPM, b.MedianTPM, cmp.DeltaPct, ciString(cmp), cmp.Verdict)
		want := report.VerdictNoDifference
		if cmp.Candidate == "async" {
			want = report.VerdictFaster
		}
		if cmp.Verdict != want {
			t.Errorf("%s vs %s: %s, want %s", cmp.Candidate, cmp.Baseline, cmp.Verdict, want)
		}
	}
	// The verdict is on NOPM: the cells carry it, with TPM and the latency
	// of every transaction type.
	async, base := cell.Variants["async"], cell.Variants["base"]
	if len(async.NOPM) != cfg.Iterations || async.MedianNOPM <= base.MedianNOPM || len(async.TypeLatencyMS) != len(tpcc.Types) || !(async.MedianTPM > async.MedianNOPM) {
		t.Errorf("async: NOPM %v (median %.0f vs base %.0f), TPM %.0f, latencies of %d types; want %d values, a higher median than base's, TPM above it, 5 types",
			async.NOPM, async.MedianNOPM, base.MedianNOPM, async.MedianTPM, len(async.TypeLatencyMS), cfg.Iterations)
	}

	ds := res.Workload.TPCC
	if ds == nil || ds.Driver != tpcc.Version || len(ds.Datasets) != 3 {
		t.Fatalf("results' TPC-C datasets: %+v", ds)
	}
	for _, v := range []string{"base", "same", "async"} {
		d := ds.Datasets[v]
		if d.LoadCheck == nil || !d.LoadCheck.Passed || len(d.LoadCheck.Conditions) != 12 {
			t.Errorf("%s: check after load %+v, want 12 conditions holding", v, d.LoadCheck)
		}
		if d.FinalCheck == nil || !d.FinalCheck.Passed || len(d.FinalCheck.Conditions) != 11 {
			t.Errorf("%s: check after the runs %+v, want 11 conditions holding", v, d.FinalCheck)
		}
		if (v == "base") != (d.ClonedFrom == "") || (v == "base") != (d.LoadSeconds > 0) {
			t.Errorf("%s: cloned from %q, load %.1f s; want base loaded and the others cloned from it", v, d.ClonedFrom, d.LoadSeconds)
		}
	}
	t.Logf("load: %.1f s, %d MB; check after the runs %.1f s", ds.Datasets["base"].LoadSeconds, ds.Datasets["base"].Bytes>>20, ds.Datasets["base"].FinalCheck.Seconds)
	md, err := os.ReadFile(filepath.Join(out, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# TPC-C A/B: 1 warehouse", "Median NOPM", "NOPM ratios", "| 4 | new_order |", "12 conditions hold", "11 conditions hold"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}

	// The same campaign again reuses the datasets and its journal: nothing runs.
	res2, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute again: %v", err)
	}
	if len(res2.Runs) != len(res.Runs) || res2.Cells[0].Comparisons[1].DeltaPct != cell.Comparisons[1].DeltaPct {
		t.Errorf("a finished campaign run again changed its results")
	}
}

// TestTPCCKillAndResume kills a TPC-C campaign mid-run; the same campaign
// then runs only what is missing, on the dataset already loaded.
func TestTPCCKillAndResume(t *testing.T) {
	bin := needPostgres(t)
	out := scratch(t)
	cfg := tpccConfig(bin, out, Variant{Name: "a"}, Variant{Name: "b", Settings: map[string]string{"work_mem": "8MB"}})
	cfg.Iterations, cfg.Duration = 3, 2*time.Second
	before := killMidCampaign(t, cfg, 2, 6)
	var rec recorder
	res, err := Execute(context.Background(), cfg, rec.on)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got, want := rec.count(EventRunStart), 6-before; got != want {
		t.Errorf("resume started %d runs, want %d", got, want)
	}
	for _, e := range rec.events {
		if strings.HasPrefix(e.Message, "load ") {
			t.Errorf("the resume loaded a dataset again: %s", e.Message)
		}
	}
	for _, r := range res.Runs {
		if !(r.NOPM > 0) {
			t.Errorf("run %d has NOPM %g", r.Seq, r.NOPM)
		}
	}
	if d := res.Workload.TPCC.Datasets["a"]; d.FinalCheck == nil || !d.FinalCheck.Passed {
		t.Errorf("check after the resumed runs: %+v", d.FinalCheck)
	}
}

// TestTPCCDatasetMismatch gives a campaign a data directory that holds a
// TPC-C dataset of another size: it must stop before touching it, naming
// what is there and what it asked for.
func TestTPCCDatasetMismatch(t *testing.T) {
	bin := needPostgres(t)
	out := scratch(t)
	cfg := tpccConfig(bin, out, Variant{Name: "a"}, Variant{Name: "b"})
	cfg.Defaults()
	dir := filepath.Join(cfg.DataDir, "a")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Enough of a data directory for the engine to take it for one.
	for _, f := range []string{"PG_VERSION", "postgresql.conf"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("15\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	loaded := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if err := writeStamp(stampPath(cfg.DataDir, "a"), &Stamp{BinDir: bin, Workload: ModeTPCC, Warehouses: 40, Driver: "pgbench-runner-tpcc/0", LoadedAt: loaded}); err != nil {
		t.Fatal(err)
	}
	_, err := Execute(context.Background(), cfg, nil)
	var me *DatasetMismatchError
	if !errors.As(err, &me) {
		t.Fatalf("Execute = %v, want a *DatasetMismatchError", err)
	}
	for _, want := range []string{"variant a", "40 warehouses loaded by pgbench-runner-tpcc/0", "1 warehouses loaded by " + tpcc.Version, "remove that directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Errorf("the data directory was touched: %v", err)
	}
}

func ciString(c report.Comparison) string {
	if c.CILowPct == nil {
		return "no interval"
	}
	return fmt.Sprintf("%+.1f%% .. %+.1f%%", *c.CILowPct, *c.CIHighPct)
}
