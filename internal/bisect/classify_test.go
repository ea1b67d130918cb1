package bisect

import (
	"math"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// wobble is a deterministic ±1.5% noise around 1 for iteration i of a
// variant; each variant gets its own phase, so that no two move together.
func wobble(i, phase int) float64 { return 1 + 0.015*math.Sin(float64(7*i+3*phase)) }

// cellsOf summarizes iterations of one client count: tps[v] is the level
// of variant v (in the order of names), run alternately as the campaign
// does, with wobble.
func cellsOf(t *testing.T, names []string, levels []float64, iterations int, alpha float64) []report.Cell {
	t.Helper()
	var vs []report.Variant
	for _, n := range names {
		vs = append(vs, report.Variant{Name: n})
	}
	var runs []report.Run
	for it := 1; it <= iterations; it++ {
		for j := range names {
			runs = append(runs, report.Run{Seq: len(runs) + 1, Variant: names[j], Clients: 1, Iteration: it, TPS: levels[j] * wobble(it, j)})
		}
	}
	cells, _, err := report.Summarize(vs, []int{1}, runs, report.AnalysisFor("alternate", alpha))
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func TestJudgeEndpoints(t *testing.T) {
	tests := []struct {
		name      string
		good, bad float64
		direction string
		want      string
	}{
		{"regression", 1000, 500, DirectionRegression, EndpointsConfirmed},
		{"improvement", 500, 1000, DirectionImprovement, EndpointsConfirmed},
		{"the other way", 500, 1000, DirectionRegression, EndpointsOpposite},
		{"no change", 1000, 1000, DirectionRegression, EndpointsNoDifference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := cellsOf(t, []string{variantGood, variantBad}, []float64{tt.good, tt.bad}, 6, 0.05/3)
			ec, got := judgeEndpoints(cells, tt.direction)
			if got != tt.want {
				t.Fatalf("outcome = %s, want %s (%s)", got, tt.want, describeEndpoints(ec))
			}
			if want := (tt.bad/tt.good - 1) * 100; math.Abs(ec[0].BadVsGood.DeltaPct-want) > 2 {
				t.Errorf("bad vs good = %s, want about %+.0f%%", ec[0].BadVsGood, want)
			}
		})
	}
}

func TestJudgeStep(t *testing.T) {
	endpoints := func(badPct float64) []EndpointCell {
		return []EndpointCell{{Clients: 1, BadVsGood: Delta{DeltaPct: badPct}}}
	}
	tests := []struct {
		name       string
		commit     float64 // its TPS, good at 1000
		bad        float64
		direction  string
		iterations int
		want       string
	}{
		{"like bad", 500, 500, DirectionRegression, 6, ClassBad},
		{"like good", 1000, 500, DirectionRegression, 6, ClassGood},
		// A change of layout moves a commit by a percent or two: it is
		// still the bad side, not a third state.
		{"a little off bad", 510, 500, DirectionRegression, 6, ClassBad},
		// Halfway on the ratio scale (the geometric mean of the ends).
		{"halfway", 707, 500, DirectionRegression, 6, classUnclear},
		{"too few runs for a test", 500, 500, DirectionRegression, 2, classUnclear},
		{"improvement, like bad", 2000, 2000, DirectionImprovement, 6, ClassBad},
		{"improvement, like good", 1000, 2000, DirectionImprovement, 6, ClassGood},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := cellsOf(t, []string{variantCommit, variantGood, variantBad}, []float64{tt.commit, 1000, tt.bad}, tt.iterations, 0.05/3)
			sc, got := judgeStep(cells, endpoints((tt.bad/1000-1)*100), tt.direction)
			if got != tt.want {
				t.Fatalf("class = %s, want %s (vs good %s, vs bad %s)", got, tt.want, sc[0].VsGood, sc[0].VsBad)
			}
			if want := (tt.commit/1000 - 1) * 100; math.Abs(sc[0].VsGood.DeltaPct-want) > 2 {
				t.Errorf("commit vs good = %s, want about %+.0f%%", sc[0].VsGood, want)
			}
		})
	}
}

// The interval of a comparison turned round is the exact inverse on the
// ratio scale, and the verdict turns round with it.
func TestInverse(t *testing.T) {
	lo, hi := -50.0, 25.0
	got := inverse(report.Comparison{DeltaPct: -20, CILowPct: &lo, CIHighPct: &hi, Verdict: report.VerdictSlower})
	if math.Abs(got.DeltaPct-25) > 1e-9 || math.Abs(*got.CILowPct+20) > 1e-9 || math.Abs(*got.CIHighPct-100) > 1e-9 {
		t.Errorf("inverse = %s, want +25.0%% [-20.0%%, +100.0%%]", got)
	}
	if got.Verdict != report.VerdictFaster {
		t.Errorf("verdict = %s, want faster", got.Verdict)
	}
}

func TestPoolContinuesIterations(t *testing.T) {
	round := func(n int) []report.Run {
		var rs []report.Run
		for it := 1; it <= n; it++ {
			for _, v := range []string{"a", "b"} {
				rs = append(rs, report.Run{Seq: len(rs) + 1, Variant: v, Clients: 4, Iteration: it, TPS: 1})
			}
		}
		// The extra profiled run of one-per-cell is not pooled.
		return append(rs, report.Run{Seq: len(rs) + 1, Variant: "a", Clients: 4, Iteration: 0, Profiled: true, TPS: 1})
	}
	runs := pool(pool(nil, round(3)), round(2))
	if len(runs) != 10 {
		t.Fatalf("pooled %d runs, want 10", len(runs))
	}
	last := runs[len(runs)-1]
	if last.Iteration != 5 || last.Seq != 10 {
		t.Errorf("last pooled run: iteration %d, seq %d; want iteration 5, seq 10", last.Iteration, last.Seq)
	}
}
