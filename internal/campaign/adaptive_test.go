package campaign

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// adaptiveRuns is a journal of the first n iterations of a cell at clients,
// b's TPS over a's by the ratios given.
func adaptiveRuns(clients int, ratios []float64) map[int]report.Run {
	runs := map[int]report.Run{}
	for i, q := range ratios {
		seq := len(runs) + 1
		runs[seq] = report.Run{Seq: seq, Variant: "a", Clients: clients, Iteration: i + 1, TPS: 1000}
		runs[seq+1] = report.Run{Seq: seq + 1, Variant: "b", Clients: clients, Iteration: i + 1, TPS: 1000 * q}
	}
	return runs
}

func TestCellLength(t *testing.T) {
	c := &Config{Variants: []Variant{{Name: "a"}, {Name: "b"}}, IterationsAuto: true, TargetCIPct: 1, MinIterations: 6, MaxIterations: 30, Alpha: 0.05}
	// Log ratios with a standard deviation of about 1%: t(5, 0.975) = 2.571,
	// so (2.571 * sd / ln 1.01)^2 pairs.
	ratios := []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.00}
	d := make([]float64, len(ratios))
	mean := 0.0
	for i, q := range ratios {
		d[i] = math.Log(q)
		mean += d[i] / float64(len(d))
	}
	ss := 0.0
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(d)-1))
	want := int(math.Ceil(math.Pow(2.5706*sd/math.Log(1.01), 2)))

	if _, _, ok := c.cellLength(adaptiveRuns(4, ratios[:5]), 4); ok {
		t.Error("cellLength decided with 5 of 6 first-stage pairs")
	}
	n, need, ok := c.cellLength(adaptiveRuns(4, ratios), 4)
	if !ok || n != want || need != want {
		t.Errorf("cellLength = %d (need %d, %v), want %d", n, need, ok, want)
	}
	if _, _, ok := c.cellLength(adaptiveRuns(4, ratios), 16); ok {
		t.Error("cellLength of another client count decided from this one's runs")
	}
	// A noisier first stage asks for more than the maximum: capped.
	noisy := []float64{1.00, 1.10, 0.90, 1.20, 0.85, 1.05}
	if n, need, ok := c.cellLength(adaptiveRuns(4, noisy), 4); !ok || n != 30 || need <= 30 {
		t.Errorf("noisy cellLength = %d (need %d, %v), want 30 and a need above it", n, need, ok)
	}
	// A quiet one stops at the first stage.
	quiet := []float64{1.001, 1.002, 1.001, 1.000, 1.002, 1.001}
	if n, _, ok := c.cellLength(adaptiveRuns(4, quiet), 4); !ok || n != 6 {
		t.Errorf("quiet cellLength = %d (%v), want the first stage, 6", n, ok)
	}
	// The delta plays no part: the same spread around another mean asks for
	// the same length.
	shifted := make([]float64, len(ratios))
	for i, q := range ratios {
		shifted[i] = q * 1.07
	}
	if n2, _, _ := c.cellLength(adaptiveRuns(4, shifted), 4); n2 != want {
		t.Errorf("cellLength of a shifted first stage = %d, want %d: the length must not depend on the delta", n2, want)
	}
	c.IterationsAuto, c.Iterations = false, 7
	if n, _, ok := c.cellLength(nil, 4); !ok || n != 7 {
		t.Errorf("fixed cellLength = %d, %v, want 7", n, ok)
	}
}

func TestValidateAdaptive(t *testing.T) {
	base := func() *Config {
		c := DefaultConfig()
		c.Variants = []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}
		c.IterationsAuto = true
		c.Defaults()
		return c
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("adaptive defaults: %v", err)
	}
	for name, tt := range map[string]struct {
		edit  func(*Config)
		field string
	}{
		"randomized":  {func(c *Config) { c.Order = OrderRandomized }, "iterations"},
		"target 0":    {func(c *Config) { c.TargetCIPct = -1 }, "target-ci"},
		"target 100":  {func(c *Config) { c.TargetCIPct = 100 }, "target-ci"},
		"min 2":       {func(c *Config) { c.MinIterations = 2 }, "min-iterations"},
		"max < min":   {func(c *Config) { c.MinIterations, c.MaxIterations = 8, 7 }, "max-iterations"},
		"fixed, zero": {func(c *Config) { c.IterationsAuto, c.Iterations = false, 0 }, "iterations"},
	} {
		c := base()
		tt.edit(c)
		errs := ValidationErrors(c.Validate())
		if len(errs) != 1 || errs[0].Path.Flag != tt.field {
			t.Errorf("%s: %v, want one fault at --%s", name, errs, tt.field)
		}
	}
	// The adaptive flags without iterations auto are a mistake, not ignored.
	for _, args := range [][]string{{"--target-ci=2"}, {"--iterations=8", "--max-iterations=20"}, {"--min-iterations=6"}} {
		_, err := Decode(append([]string{"--variant=name=a,bin=/b", "--variant=name=b,bin=/b"}, args...))
		if err == nil || !strings.Contains(err.Error(), "only with --iterations auto") {
			t.Errorf("Decode(%q) = %v, want the adaptive flag refused", args, err)
		}
	}
	c, err := Decode([]string{"--variant=name=a,bin=/b", "--variant=name=b,bin=/b", "--iterations=auto", "--target-ci=0.5", "--max-iterations=50"})
	if err != nil || !c.IterationsAuto || c.TargetCIPct != 0.5 || c.MinIterations != 6 || c.MaxIterations != 50 || c.planIterations() != 50 {
		t.Errorf("Decode adaptive = %+v, %v", c, err)
	}
	if _, err := Decode([]string{"--iterations=many"}); err == nil || !strings.Contains(err.Error(), "neither a number nor auto") {
		t.Errorf("--iterations=many: %v", err)
	}
}

// TestAdaptiveCampaign runs real adaptive campaigns: a cell whose target is
// easy stops after its first stage, and the progress events' total shrinks
// to what runs; a cell whose target cannot be met runs to the maximum and
// says so in the results.
func TestAdaptiveCampaign(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	for _, tt := range []struct {
		name       string
		target     float64
		wantRuns   int
		wantWarned bool
	}{
		// 99%: any spread a 1 s run here shows decides at the first stage.
		{"easy target", 99, 2 * 3, false},
		{"target out of reach", 0.001, 2 * 4, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := scratch(t)
			cfg := &Config{
				Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
				Settings: map[string]string{"shared_buffers": "32MB"},
				Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: time.Second,
				IterationsAuto: true, TargetCIPct: tt.target, MinIterations: 3, MaxIterations: 4, OutDir: out, Clone: true,
			}
			seedData(t, cfg, "a")
			var rec recorder
			res, err := Execute(context.Background(), cfg, rec.on)
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if len(res.Runs) != tt.wantRuns && firstStageNoisy(res, cfg) {
				// This shared machine's TPS can fall by 4x from one run to
				// the next (a build starting beside the test): such a step
				// inside the first stage rightly keeps an easy cell going.
				// The rule is what is tested, not the machine: measure once
				// more, and fail only if the engine disagrees again.
				t.Logf("the first stage's pairs need more than %d iterations on this machine: measuring once more", cfg.MinIterations)
				cfg.OutDir, rec = scratch(t), recorder{}
				seedData(t, cfg, "a")
				if res, err = Execute(context.Background(), cfg, rec.on); err != nil {
					t.Fatalf("Execute: %v", err)
				}
			}
			for _, e := range rec.events {
				t.Log(e.String())
			}
			if len(res.Runs) != tt.wantRuns || rec.count(EventRunDone) != tt.wantRuns {
				t.Fatalf("%d runs (%d run_done), want %d", len(res.Runs), rec.count(EventRunDone), tt.wantRuns)
			}
			var last Event
			for _, e := range rec.events {
				if e.Event == EventRunDone {
					last = e
				}
			}
			if last.Total != tt.wantRuns || last.ETASeconds == nil || *last.ETASeconds != 0 {
				t.Errorf("last run_done = %+v, want total %d and no time left", last, tt.wantRuns)
			}
			if first := rec.events[0]; tt.wantRuns < 8 {
				for _, e := range rec.events {
					if e.Event == EventRunStart {
						first = e
						break
					}
				}
				if first.Total != 8 {
					t.Errorf("first run_start total = %d, want the maximum 8 before the cell decides", first.Total)
				}
			}
			cmp := res.Cells[0].Comparisons[0]
			if cmp.Method != report.MethodPairedTTwoStage || cmp.NBaseline != tt.wantRuns/2 || cmp.CILowPct == nil {
				t.Errorf("comparison = %+v, want the two-stage method over %d pairs with an interval", cmp, tt.wantRuns/2)
			}
			warned := strings.Contains(strings.Join(res.Warnings, "\n"), "max-iterations")
			if warned != tt.wantWarned {
				t.Errorf("warnings %q: warned about max-iterations = %v, want %v", res.Warnings, warned, tt.wantWarned)
			}
			if w := res.Workload; !w.IterationsAuto || w.MinIterations != 3 || w.MaxIterations != 4 || w.TargetCIPct != tt.target {
				t.Errorf("workload = %+v, want the adaptive rule recorded", w)
			}
			// Run again: the finished campaign decides the same from its
			// journal and runs nothing.
			var again recorder
			res2, err := Execute(context.Background(), cfg, again.on)
			if err != nil || again.count(EventRunStart) != 0 || len(res2.Runs) != tt.wantRuns {
				t.Errorf("second Execute: %v, %d started, %d runs", err, again.count(EventRunStart), len(res2.Runs))
			}
		})
	}
}

// firstStageNoisy says whether the first stage of res's one cell asked for
// more pairs than that stage has, by the rule the engine applies.
func firstStageNoisy(res *report.Results, c *Config) bool {
	tps := map[string][]float64{}
	for _, r := range res.Runs {
		if r.Iteration <= c.MinIterations {
			tps[r.Variant] = append(tps[r.Variant], r.TPS)
		}
	}
	return report.TwoStageIterations(tps["a"], tps["b"], c.TargetCIPct, c.Alpha, math.MaxInt32) > c.MinIterations
}
