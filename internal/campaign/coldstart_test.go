package campaign

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// coldStartBias simulates A/A campaigns of c in which the first measured
// run on a freshly started server loses penalty of its throughput unless a
// warm-up ran before it, exactly where the engine starts servers and warms
// them up (Plan, startsServer, Warmup), and analyses them as the engine
// does (summarize). It returns how far the penalty moves the mean delta of
// the first cell's comparison, in percentage points: the same noise runs
// with and without the penalty, so the noise cancels.
func coldStartBias(t *testing.T, c *Config, penalty float64, campaigns int) float64 {
	t.Helper()
	steps := c.Plan()
	variants := []report.Variant{{Name: c.Variants[0].Name}, {Name: c.Variants[1].Name}}
	rng := rand.New(rand.NewPCG(11, uint64(c.planIterations())))
	shift := 0.0
	for k := 0; k < campaigns; k++ {
		var cold, warm []report.Run
		for i, st := range steps {
			var prev *Step
			if i > 0 {
				prev = &steps[i-1]
			}
			tps := 10000 * math.Exp(0.02*rng.NormFloat64())
			r := report.Run{Seq: st.Seq, Variant: st.Variant, Clients: st.Clients, Iteration: st.Iteration, TPS: tps}
			warm = append(warm, r)
			if c.startsServer(st, prev) && c.Warmup == 0 {
				r.TPS *= 1 - penalty
			}
			cold = append(cold, r)
		}
		delta := func(runs []report.Run) float64 {
			res, err := summarize(c.definition(), variants, runs, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			return res.Cells[0].Comparisons[0].DeltaPct
		}
		shift += delta(cold) - delta(warm)
	}
	return shift / float64(campaigns)
}

// TestNoColdStartBias: with the default warm-up, a 5% penalty on runs
// right after a server start moves the A/A delta by less than 0.1% at
// every number of iterations and restart policy. Without a warm-up the
// alternating order gives the baseline one more post-start run at even n,
// and the same penalty moves the delta by about penalty/n.
func TestNoColdStartBias(t *testing.T) {
	const penalty = 0.05
	for _, restart := range []string{RestartNever, RestartCell, RestartRun} {
		for _, n := range []int{5, 6, 10, 11} {
			c := DefaultConfig()
			c.Variants = []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}
			c.Clients, c.Iterations, c.Duration, c.Restart = []int{1, 8}, n, 10*time.Second, restart
			c.Defaults()
			if c.Warmup <= 0 {
				t.Fatalf("default warm-up = %v, want one", c.Warmup)
			}
			if got := coldStartBias(t, c, penalty, 200); math.Abs(got) >= 0.1 {
				t.Errorf("restart %s, %d iterations, warm-up %v: the post-start penalty moves the A/A delta by %+.3f%%, want less than 0.1%%", restart, n, c.Warmup, got)
			}
			c.WarmupAuto, c.Warmup = false, 0
			got := coldStartBias(t, c, penalty, 200)
			if restart == RestartNever && n%2 == 0 {
				// The baseline gets n/2+1 post-start runs, the candidate n/2.
				if want := 100 * penalty / float64(n); math.Abs(got-want) > 0.05 {
					t.Errorf("restart never, %d iterations, no warm-up: bias %+.3f%%, want about %+.3f%% (the simulation must see the bias it guards against)", n, got, want)
				}
			}
			t.Logf("restart %-5s n=%2d: no warm-up moves the delta by %+.3f%%", restart, n, got)
		}
	}
}

func TestAutoWarmup(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 5 * time.Second: 2 * time.Second, 10 * time.Second: 3 * time.Second,
		time.Minute: 15 * time.Second, 10 * time.Minute: time.Minute,
	} {
		if got := AutoWarmup(d); got != want {
			t.Errorf("AutoWarmup(%v) = %v, want %v", d, got, want)
		}
	}
}
