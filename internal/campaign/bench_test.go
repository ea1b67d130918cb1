package campaign

import (
	"context"
	"flag"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// BenchmarkHarnessOverhead compares the TPS the engine reports with the
// same pgbench command run by hand (runuser, no Go in between), interleaved
// on the same running cluster. Each iteration is one pair of 2 s
// select-only runs. Metrics: ratio (engine / by hand, same arguments
// including the per-transaction log) and ratio_nolog (engine / by hand
// without --log, i.e. the cost of collecting latency percentiles).
//
//	go test ./internal/campaign -run '^$' -bench HarnessOverhead -benchtime 5x
//
// harnessRun is the length of each pgbench run of BenchmarkHarnessOverhead;
// longer runs resolve smaller differences on a noisy machine.
var harnessRun = flag.Duration("harness.run", 2*time.Second, "length of each run in BenchmarkHarnessOverhead")

func BenchmarkHarnessOverhead(b *testing.B) {
	needPostgres(b)
	testhost.RequireCommand(b, "runuser")
	out := benchScratch(b)
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: pgBinDir, HugePages: "off"}, {Name: "b", BinDir: pgBinDir, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "64MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: *harnessRun, Iterations: 1, OutDir: out,
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	e := &engine{cfg: cfg, emit: func(Event) {}, byName: map[string]*variantState{}}
	vs := &variantState{Variant: cfg.Variants[0], settings: cfg.settingsFor(cfg.Variants[0])}
	vs.cluster = clusterFor(cfg, vs)
	e.vars = []*variantState{vs}
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
	defer e.stopRunning(ctx)
	if err := e.ensure(ctx, vs); err != nil {
		b.Fatal(err)
	}
	var ratios, ratiosNoLog []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var engineTPS, handTPS, handNoLog float64
		dir := filepath.Join(out, "bench", time.Now().Format("150405.000000"))
		if err := mkdirFor(dir); err != nil {
			b.Fatal(err)
		}
		opts := cfg.runOptions(2)
		runs := []func(){
			func() {
				o := opts
				o.LogPrefix = filepath.Join(dir, "engine")
				so, _, _, err := e.pgbench(ctx, vs, o.Args(), dir, "")
				if err != nil {
					b.Fatal(err)
				}
				po, err := pgbench.ParseOutput(so)
				if err != nil {
					b.Fatal(err)
				}
				engineTPS += po.TPS
			},
			func() {
				o := opts
				o.LogPrefix = filepath.Join(dir, "hand")
				handTPS += byHand(b, vs, append(o.Args(), e.connArgs(vs)...))
			},
			func() { handNoLog += byHand(b, vs, append(opts.Args(), e.connArgs(vs)...)) },
		}
		// Rotate who goes first so no side always gets the warmer cache.
		for j := range runs {
			runs[(i+j)%len(runs)]()
		}
		ratios = append(ratios, engineTPS/handTPS)
		ratiosNoLog = append(ratiosNoLog, engineTPS/handNoLog)
	}
	b.StopTimer()
	// Medians of the per-iteration ratios: one noisy neighbour moment
	// moves one pair, not the result.
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(ratiosNoLog), "ratio_nolog")
	b.Logf("ratios %.4f, without log %.4f", ratios, ratiosNoLog)
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
			if e.Event == "run_start" && firstRun.IsZero() {
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
