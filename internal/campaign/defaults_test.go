package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// slowdownSetting is a setting that costs select-only a few percent here,
// and so is the modest, real slow-down the default campaign must find.
// See TestDefaultsFindAModestSlowdown for the figures it measured.
const slowdownSetting, slowdownValue = "default_transaction_isolation", "serializable"

// logBound is the per-transaction log bound of the campaign below.
const logBound = 4000

// TestDefaultsFindAModestSlowdown runs one campaign at the defaults of the
// definition (iterations, order, warm-up, restarts, alpha, the analysis
// and its correction) with three variants: a baseline, the same server
// again (A/A), and the same server with slowdownSetting. The A/A pair
// must give no-difference and the slower one "slower". Only the run
// length and the dataset are small, to keep the test short. Every
// measured run right after a server start must follow a warm-up, and no
// other.
//
// An A/A campaign calls a difference by chance at rate alpha (5%), which
// would fail one CI run in twenty; a chance call does not repeat, a bias
// does, so an A/A call is measured once more and fails only if it holds.
func TestDefaultsFindAModestSlowdown(t *testing.T) {
	bin := needPostgres(t)
	campaignAt := func(out string) (*Config, *report.Results) {
		t.Helper()
		cfg := DefaultConfig()
		cfg.Variants = []Variant{
			{Name: "base", BinDir: bin, HugePages: "off"},
			{Name: "same", BinDir: bin, HugePages: "off"},
			{Name: "slow", BinDir: bin, HugePages: "off", Settings: map[string]string{slowdownSetting: slowdownValue}},
		}
		cfg.Settings = map[string]string{"shared_buffers": "64MB"}
		// One client: pgbench and its backend fit the two cores of a
		// small CI machine, which keeps the pairs' noise down.
		cfg.Scale, cfg.Clients, cfg.Duration, cfg.OutDir, cfg.Clone = 1, []int{1}, 4*time.Second, out, true
		// The per-transaction logs are bounded by a small number here, to
		// see the bound hold at this machine's TPS.
		cfg.LogLines = logBound
		cfg.Defaults()
		res, err := Execute(context.Background(), cfg, nil)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		return cfg, res
	}
	cfg, res := campaignAt(scratch(t))
	if cfg.Iterations < 10 || !cfg.WarmupAuto || cfg.Warmup != time.Second || cfg.Order != OrderAlternate || cfg.Alpha != 0.05 {
		t.Fatalf("defaults = %d iterations, warm-up %v (auto %v), order %s, alpha %v: not what this test is about", cfg.Iterations, cfg.Warmup, cfg.WarmupAuto, cfg.Order, cfg.Alpha)
	}
	if len(res.Runs) != 3*cfg.Iterations {
		t.Fatalf("%d runs, want %d", len(res.Runs), 3*cfg.Iterations)
	}
	steps := cfg.Plan()
	for _, r := range res.Runs {
		secs := int(cfg.Duration / time.Second)
		// The rate aims at half the bound from the TPS before the run: a
		// run may pass the bound only by being twice as fast as that.
		if !(r.SamplingRate > 0 && r.SamplingRate < 1) || r.LoggedTransactions <= 0 || r.LoggedTransactions > 2*logBound ||
			r.LatencyMS.P99 <= 0 || len(r.TPSSeries) < secs-2 {
			t.Errorf("run %d: sampling rate %v, %d transactions logged, p99 %v ms, %d seconds of series; want a sample of at most %d lines, a p99 and a series",
				r.Seq, r.SamplingRate, r.LoggedTransactions, r.LatencyMS.P99, len(r.TPSSeries), logBound)
		}
	}
	for i, r := range res.Runs {
		var prev *Step
		if i > 0 {
			prev = &steps[i-1]
		}
		_, err := os.Stat(filepath.Join(cfg.OutDir, r.LogDir, "warmup.stdout"))
		if warmed, starts := err == nil, cfg.startsServer(steps[i], prev); warmed != starts {
			t.Errorf("run %d (%s, iteration %d): warm-up ran = %v, server started = %v; want a warm-up exactly after each start", r.Seq, r.Variant, r.Iteration, warmed, starts)
		}
	}
	byCandidate := func(res *report.Results) map[string]report.Comparison {
		m := map[string]report.Comparison{}
		for _, c := range res.Cells[0].Comparisons {
			m[c.Candidate] = c
		}
		return m
	}
	cmp := byCandidate(res)
	median := func(name string) float64 { return res.Cells[0].Variants[name].MedianTPS }
	t.Logf("%s=%s: %+.2f%% [%s], p %.2g (adjusted %.2g); A/A: %+.2f%%, p %.2g; medians base %.0f, same %.0f, slow %.0f tps",
		slowdownSetting, slowdownValue, cmp["slow"].DeltaPct, ciText(cmp["slow"]), cmp["slow"].PValue, cmp["slow"].PAdjusted,
		cmp["same"].DeltaPct, cmp["same"].PValue, median("base"), median("same"), median("slow"))
	if c := cmp["slow"]; c.Verdict != report.VerdictSlower || c.Method != report.MethodPairedT || res.Correction != report.CorrectionHolm {
		t.Errorf("%s=%s vs the baseline = %+v (correction %s), want slower by the paired t with Holm's correction", slowdownSetting, slowdownValue, c, res.Correction)
	}
	if c := cmp["same"]; c.Verdict != report.VerdictNoDifference {
		t.Logf("A/A called %s (p adjusted %.3g): measuring it once more", c.Verdict, c.PAdjusted)
		_, again := campaignAt(scratch(t))
		if c2 := byCandidate(again)["same"]; c2.Verdict != report.VerdictNoDifference {
			t.Errorf("A/A called a difference twice running: %+v, then %+v", c, c2)
		}
	}
}

func ciText(c report.Comparison) string {
	if c.CILowPct == nil || c.CIHighPct == nil {
		return "no interval"
	}
	return fmt.Sprintf("%+.2f%%, %+.2f%%", *c.CILowPct, *c.CIHighPct)
}
