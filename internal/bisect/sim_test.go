package bisect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// The decision rule is a method of this package (classify.go): each look
// at a step decides at alpha / rounds with Holm across the two comparisons,
// and a class needs both a significant difference from one end and an
// interval within half the endpoints' change of the other. These
// simulations run it, through report.Summarize and judgeStep exactly as
// measure and step do, on runs drawn as a noisy machine gives them: each
// run's TPS is its commit's level times log-normal noise times a slow
// random-walk drift shared by consecutive runs, in the alternating order
// of campaign.Plan, rounds pooled as pool pools them.
//
//	go test -run Simulation -v ./internal/bisect

// simMachine draws runs.
type simMachine struct {
	r     *rand.Rand
	sigma float64 // run-to-run noise, log scale (0.03 is about 3%)
	drift float64 // random-walk step per run, log scale
	level float64 // the walk's position
}

// campaign runs n iterations of the variants at levels, in the alternating
// order (the first variant rotated each iteration), after the runs
// already in pooled, and returns them all.
func (m *simMachine) campaign(names []string, levels []float64, n int, pooled []report.Run) []report.Run {
	var round []report.Run
	for it := 1; it <= n; it++ {
		for j := range names {
			v := (j + it - 1) % len(names)
			m.level += m.drift * m.r.NormFloat64()
			tps := 1000 * levels[v] * math.Exp(m.level+m.sigma*m.r.NormFloat64())
			round = append(round, report.Run{Seq: len(round) + 1, Variant: names[v], Clients: 1, Iteration: it, TPS: tps})
		}
	}
	return pool(pooled, round)
}

// shortTrials is full under make test and short under go test -short
// (make test-short), the inner loop.
func shortTrials(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// look summarizes pooled runs as measure does at alpha / rounds.
func look(t *testing.T, names []string, runs []report.Run, alpha float64, rounds int) []report.Cell {
	t.Helper()
	vs := make([]report.Variant, len(names))
	for i, n := range names {
		vs[i] = report.Variant{Name: n}
	}
	cells, _, err := report.Summarize(vs, []int{1}, runs, report.AnalysisFor("alternate", alpha/float64(rounds)))
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// simEndpoints measures good against bad until they decide or the rounds
// run out; ok is false unless they are confirmed.
func (m *simMachine) endpoints(t *testing.T, bad float64, n, rounds int, alpha float64) ([]EndpointCell, bool) {
	names := []string{variantGood, variantBad}
	var runs []report.Run
	for k := 1; k <= rounds; k++ {
		runs = m.campaign(names, []float64{1, bad}, n, runs)
		ec, outcome := judgeEndpoints(look(t, names, runs, alpha, rounds), DirectionRegression)
		if outcome != EndpointsNoDifference || k == rounds {
			return ec, outcome == EndpointsConfirmed
		}
	}
	return nil, false
}

// step classifies a commit at level against good (1) and bad, as step
// does: rounds until decided, skipped when still unclear.
func (m *simMachine) step(t *testing.T, level, bad float64, ep []EndpointCell, n, rounds int, alpha float64) string {
	names := []string{variantCommit, variantGood, variantBad}
	var runs []report.Run
	for k := 1; k <= rounds; k++ {
		runs = m.campaign(names, []float64{level, 1, bad}, n, runs)
		_, class := judgeStep(look(t, names, runs, alpha, rounds), ep, DirectionRegression)
		if class != classUnclear {
			return class
		}
	}
	return ClassSkipped
}

// TestSimulationDecisionRule runs thousands of steps of commits that are
// truly good, truly bad, or halfway between, at two sizes of regression
// against 3% run noise with drift. What it must show:
//   - a wrong class (a good commit called bad, or a bad one good) happens
//     in at most alpha of the steps, and a commit halfway between the ends
//     is mostly left unclear;
//   - a clear regression (10%) is classified right in most steps, the
//     rest skipped rather than misclassified, and in nearly all of them at
//     the campaign's default of 10 iterations; a smaller one (5%) is
//     skipped more often, and still not misclassified.
//
// Under -short it runs a fifth of the trials: the allowances below are
// three standard errors at the number of steps actually judged, so the
// checks stay as strict in standard errors and a rule that misclassifies
// still fails them.
func TestSimulationDecisionRule(t *testing.T) {
	const (
		alpha  = 0.05
		rounds = 3
	)
	trials := shortTrials(1500, 300)
	for _, sc := range []struct {
		name     string
		bad      float64 // bad's level against good's 1
		n        int     // iterations per round
		minRight float64 // the share of steps classified right, at least
	}{
		// 4 iterations a round, as the real test runs.
		{"10% regression, 4 iterations", 0.90, 4, 0.6},
		// The campaign's default of 10.
		{"10% regression, 10 iterations", 0.90, 10, 0.95},
		{"5% regression, 4 iterations", 0.95, 4, 0},
	} {
		t.Run(sc.name, func(t *testing.T) {
			m := &simMachine{r: rand.New(rand.NewPCG(17, uint64(sc.bad*1000))), sigma: 0.03, drift: 0.005}
			var confirmed int
			counts := map[string]map[string]int{}
			truths := []struct {
				name  string
				level float64
			}{{"good", 1}, {"bad", sc.bad}, {"halfway", math.Sqrt(sc.bad)}}
			for _, tr := range truths {
				counts[tr.name] = map[string]int{}
			}
			for range trials {
				ep, ok := m.endpoints(t, sc.bad, sc.n, rounds, alpha)
				if !ok {
					continue
				}
				confirmed++
				for _, tr := range truths {
					counts[tr.name][m.step(t, tr.level, sc.bad, ep, sc.n, rounds, alpha)]++
				}
			}
			t.Logf("%s a round, 3%% noise, at most %d rounds: endpoints confirmed in %d of %d", sc.name, rounds, confirmed, trials)
			if confirmed < 50 {
				t.Fatalf("endpoints confirmed %d times: too few to judge the steps", confirmed)
			}
			for _, tr := range truths {
				c := counts[tr.name]
				share := func(class string) float64 { return float64(c[class]) / float64(confirmed) }
				t.Logf("  truly %-7s: good %.3f, bad %.3f, skipped %.3f", tr.name, share(ClassGood), share(ClassBad), share(ClassSkipped))
				// A Monte Carlo allowance of three standard errors.
				allow := func(p float64) float64 { return p + 3*math.Sqrt(p*(1-p)/float64(confirmed)) }
				switch tr.name {
				case "good", "bad":
					wrong := share(ClassBad)
					if tr.name == "bad" {
						wrong = share(ClassGood)
					}
					if wrong > allow(alpha) {
						t.Errorf("truly %s: misclassified in %.3f of the steps, want at most alpha %.2f", tr.name, wrong, alpha)
					}
				default:
					// Halfway there is no right answer; either end names a
					// commit that carries part of the change. The rule
					// calls it unclear but for the noise in the endpoints'
					// own measure of the change, which the margin uses.
					if called := share(ClassGood) + share(ClassBad); called > allow(2*alpha) {
						t.Errorf("truly halfway: called good or bad in %.3f of the steps, want at most %.2f", called, 2*alpha)
					}
				}
				if tr.name != "halfway" {
					if right := share(tr.name); right < sc.minRight {
						t.Errorf("truly %s: classified right in %.3f of the steps, want at least %.2f", tr.name, right, sc.minRight)
					}
				}
			}
		})
	}
}

// TestSimulationEndpointsWithoutChange measures endpoints that do not
// differ: the bisect must find nothing to bisect, wrongly confirming a
// regression in at most alpha of the campaigns over all its rounds.
func TestSimulationEndpointsWithoutChange(t *testing.T) {
	const (
		alpha  = 0.05
		rounds = 3
	)
	trials := shortTrials(3000, 1000)
	m := &simMachine{r: rand.New(rand.NewPCG(23, 5)), sigma: 0.03, drift: 0.005}
	confirmed := 0
	for range trials {
		if _, ok := m.endpoints(t, 1, 4, rounds, alpha); ok {
			confirmed++
		}
	}
	rate := float64(confirmed) / float64(trials)
	t.Logf("no change, 3%% noise, 4 iterations a round, at most %d rounds: a regression confirmed in %.4f of %d campaigns", rounds, rate, trials)
	if limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(trials)); rate > limit {
		t.Errorf("endpoints without a change confirmed in %.4f of the campaigns, want at most alpha %.2f", rate, alpha)
	}
}
