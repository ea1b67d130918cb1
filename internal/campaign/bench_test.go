package campaign

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// BenchmarkHarnessOverhead measures the observer effect of a campaign: the
// TPS of the engine's measured run (runStep, so its own arguments, -P 1 and
// the sampled log included) against the same pgbench command run by hand
// with runuser and nothing observed (no --log, no -P), interleaved on the
// same running cluster. Each pair is two select-only runs, the side that
// goes first alternating. The metric ratio is the median of the pairs'
// engine / by-hand ratios; outside [0.99, 1.01] the benchmark fails. With
// -harness.fulllog each pair also runs the command by hand with every
// transaction logged, and ratio_fulllog is its median ratio to the
// unobserved run: what the sampling saves.
//
//	go test ./internal/campaign -run '^$' -bench HarnessOverhead -harness.pairs 40 -harness.run 10s
//
// A run is -harness.run long and there are max(-harness.pairs, b.N) pairs:
// on a noisy machine, more and longer runs resolve smaller differences.
var (
	harnessRun     = flag.Duration("harness.run", 10*time.Second, "length of each run in BenchmarkHarnessOverhead")
	harnessPairs   = flag.Int("harness.pairs", 30, "pairs of runs in BenchmarkHarnessOverhead, at least (-benchtime Nx asks for N)")
	harnessFullLog = flag.Bool("harness.fulllog", false, "also measure a run logging every transaction in BenchmarkHarnessOverhead")
)

func BenchmarkHarnessOverhead(b *testing.B) {
	testhost.RequireCommand(b, "runuser")
	const clients = 2
	e, vs, out := benchEngine(b, clients)
	engineRun := e.benchRun(b, vs, out, clients)
	// One unmeasured run warms the cache and gives the sampling rate its
	// estimate, as an earlier run of the campaign would.
	engineRun()
	// The command by hand is the engine's measured run without what
	// observes it.
	plain := e.measuredRun(clients, "")
	plain.LogPrefix, plain.SamplingRate, plain.Progress = "", 0, 0
	fullLogDir := filepath.Join(out, "fulllog")
	if err := mkdirFor(fullLogDir); err != nil {
		b.Fatal(err)
	}
	full := plain
	full.LogPrefix = filepath.Join(fullLogDir, "tx")

	pairs := max(b.N, *harnessPairs)
	var ratios, ratiosFull, rates []float64
	b.ResetTimer()
	for i := 0; i < pairs; i++ {
		var engineTPS, handTPS, fullTPS float64
		runs := []func(){
			func() {
				r := engineRun()
				engineTPS = r.TPS
				rates = append(rates, r.SamplingRate)
			},
			func() { handTPS = byHand(b, vs, append(plain.Args(), e.connArgs(vs)...)) },
		}
		if *harnessFullLog {
			runs = append(runs, func() {
				fullTPS = byHand(b, vs, append(full.Args(), e.connArgs(vs)...))
				if err := removeLogs(fullLogDir); err != nil {
					b.Fatal(err)
				}
			})
		}
		// Rotate who goes first so no side always gets the warmer cache.
		for j := range runs {
			runs[(i+j)%len(runs)]()
		}
		ratios = append(ratios, engineTPS/handTPS)
		if *harnessFullLog {
			ratiosFull = append(ratiosFull, fullTPS/handTPS)
		}
	}
	b.StopTimer()
	// Medians of the per-pair ratios: one noisy neighbour moment moves one
	// pair, not the result.
	m := median(ratios)
	b.ReportMetric(m, "ratio")
	q1, q3 := quantile(ratios, 0.25), quantile(ratios, 0.75)
	b.Logf("%d pairs of %s runs, sampling rates %.3g..%.3g: engine / by hand median %.4f, quartiles %.4f..%.4f, range %.4f..%.4f",
		pairs, *harnessRun, slices.Min(rates), slices.Max(rates), m, q1, q3, slices.Min(ratios), slices.Max(ratios))
	b.Logf("ratios %.4f", ratios)
	if *harnessFullLog {
		b.ReportMetric(median(ratiosFull), "ratio_fulllog")
		b.Logf("every transaction logged / by hand: median %.4f, ratios %.4f", median(ratiosFull), ratiosFull)
	}
	if m < 0.99 || m > 1.01 {
		b.Errorf("engine / by hand median ratio %.4f (quartiles %.4f..%.4f over %d pairs of %s runs) is outside [0.99, 1.01]", m, q1, q3, pairs, *harnessRun)
	}
}

// benchEngine is an engine with one variant loaded and running, for
// benchmarks that time its runs against something else on the same server.
func benchEngine(b *testing.B, clients int) (*engine, *variantState, string) {
	needPostgres(b)
	out := benchScratch(b)
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: pgBinDir, HugePages: "off"}, {Name: "b", BinDir: pgBinDir, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "64MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{clients}, Duration: *harnessRun, Iterations: 1, OutDir: out,
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	e := &engine{cfg: cfg, emit: func(Event) {}, byName: map[string]*variantState{}}
	vs := &variantState{Variant: cfg.Variants[0], settings: cfg.settingsFor(cfg.Variants[0])}
	vs.cluster = clusterFor(cfg, vs)
	e.vars = []*variantState{vs}
	e.byName[vs.Name] = vs
	ctx := context.Background()
	if err := mkdirFor(cfg.DataDir); err != nil {
		b.Fatal(err)
	}
	if err := e.version(ctx, vs); err != nil {
		b.Fatal(err)
	}
	if err := e.prepare(ctx, 0, vs); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.stopRunning(context.Background()) })
	if err := e.ensure(ctx, vs); err != nil {
		b.Fatal(err)
	}
	return e, vs, out
}

// benchRun returns a function that runs one measured step of the engine
// at clients, numbered in turn, on its running server.
func (e *engine) benchRun(b *testing.B, vs *variantState, out string, clients int) func() *report.Run {
	seq := 0
	return func() *report.Run {
		seq++
		// After a run of the same variant and client count: the server
		// keeps running, as between the runs of a campaign.
		prev := &Step{Variant: vs.Name, Clients: clients}
		r, err := e.runStep(context.Background(), Step{Seq: seq, Variant: vs.Name, Clients: clients, Iteration: seq}, prev)
		if err != nil {
			b.Fatal(err)
		}
		// The run's log is read already; keep the disk from filling.
		os.RemoveAll(filepath.Join(out, r.LogDir))
		return r
	}
}

// BenchmarkObserveOverhead is the A/A of observing: pairs of the engine's
// measured run with counters and wait-event sampling on and off, who goes
// first alternating, on the same running server. ratio is the median of
// the pairs' on / off TPS ratios, with its quartiles logged; below 0.995
// (observing costs more than 0.5%) the benchmark fails.
//
//	go test ./internal/campaign -run '^$' -bench ObserveOverhead -harness.pairs 30 -harness.run 10s
func BenchmarkObserveOverhead(b *testing.B) {
	const clients = 2
	e, vs, out := benchEngine(b, clients)
	run := e.benchRun(b, vs, out, clients)
	run()
	pairs := max(b.N, *harnessPairs)
	ratios := pairRatios(b, pairs,
		func() float64 {
			e.cfg.Counters, e.cfg.WaitSampleInterval = true, 100*time.Millisecond
			return run().TPS
		},
		func() float64 { e.cfg.Counters, e.cfg.WaitSampleInterval = false, 0; return run().TPS })
	m := median(ratios)
	b.ReportMetric(m, "ratio")
	b.Logf("%d pairs of %s runs: observed / unobserved median %.4f, quartiles %.4f..%.4f, range %.4f..%.4f",
		pairs, *harnessRun, m, quantile(ratios, 0.25), quantile(ratios, 0.75), slices.Min(ratios), slices.Max(ratios))
	if m < 0.995 {
		b.Errorf("counters and wait sampling cost %.2f%% of TPS (median of %d pairs), more than 0.5%%", (1-m)*100, pairs)
	}
}

// pairRatios runs pairs of on and off, the side that goes first
// alternating, and returns each pair's on / off ratio; the benchmark's
// timer runs over the pairs only.
func pairRatios(b *testing.B, pairs int, on, off func() float64) []float64 {
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < pairs; i++ {
		var x, y float64
		if i%2 == 0 {
			x = on()
			y = off()
		} else {
			y = off()
			x = on()
		}
		ratios = append(ratios, x/y)
	}
	b.StopTimer()
	return ratios
}

// BenchmarkProfileOverhead measures what perf record of the server costs:
// pairs of the engine's measured run profiled and not, as above; ratio is
// the median profiled / unprofiled TPS. It states the cost; it has no
// bound.
//
//	go test ./internal/campaign -run '^$' -bench ProfileOverhead -harness.pairs 20 -harness.run 10s
func BenchmarkProfileOverhead(b *testing.B) {
	const clients = 2
	e, vs, out := benchEngine(b, clients)
	e.cfg.Profile = ProfileEveryRun
	seq := 0
	run := func(profiled bool) float64 {
		seq++
		st := Step{Seq: seq, Variant: vs.Name, Clients: clients, Iteration: seq, Profiled: profiled}
		r, err := e.runStep(context.Background(), st, &Step{Variant: vs.Name, Clients: clients})
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(filepath.Join(out, r.LogDir))
		return r.TPS
	}
	run(false)
	pairs := max(b.N, *harnessPairs)
	ratios := pairRatios(b, pairs, func() float64 { return run(true) }, func() float64 { return run(false) })
	m := median(ratios)
	b.ReportMetric(m, "ratio")
	b.Logf("%d pairs of %s runs, unwinding %s: profiled / unprofiled median %.4f, quartiles %.4f..%.4f",
		pairs, *harnessRun, vs.unwind, m, quantile(ratios, 0.25), quantile(ratios, 0.75))
}

// removeLogs empties dir of pgbench's per-transaction logs.
func removeLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if err := os.Remove(filepath.Join(dir, en.Name())); err != nil {
			return err
		}
	}
	return nil
}

func byHand(b *testing.B, vs *variantState, args []string) float64 {
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(vs.BinDir, "pgbench")}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("pgbench by hand: %v", err)
	}
	o, err := pgbench.ParseOutput(string(out))
	if err != nil {
		b.Fatal(err)
	}
	return o.TPS
}

// BenchmarkCampaignOverhead runs a small campaign with --restart never and
// reports what the engine adds per run on top of pgbench's own wall time
// (server switches between variants, log parsing, journal fsync), and the
// one-off setup (initdb and load of both variants).
//
//	go test ./internal/campaign -run '^$' -bench CampaignOverhead -benchtime 1x
func BenchmarkCampaignOverhead(b *testing.B) {
	needPostgres(b)
	for i := 0; i < b.N; i++ {
		out := benchScratch(b)
		cfg := &Config{
			Variants: []Variant{{Name: "a", BinDir: pgBinDir, HugePages: "off"}, {Name: "b", BinDir: pgBinDir, HugePages: "off"}},
			Mode:     "select-only", Scale: 1, Clients: []int{1, 2}, Duration: 2 * time.Second, Iterations: 3, OutDir: out,
		}
		var firstRun time.Time
		t0 := time.Now()
		res, err := Execute(context.Background(), cfg, func(e Event) {
			if e.Event == EventRunStart && firstRun.IsZero() {
				firstRun = time.Now()
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t0).Seconds()
		sum := 0.0
		for _, r := range res.Runs {
			sum += r.Seconds
		}
		n := float64(len(res.Runs))
		b.ReportMetric((wall-firstRun.Sub(t0).Seconds()-sum)/n, "overhead_s/run")
		b.ReportMetric((wall-sum)/n, "overhead_incl_setup_s/run")
		b.ReportMetric(firstRun.Sub(t0).Seconds(), "setup_s")
	}
}
