package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/combin"
	"gonum.org/v1/gonum/stat/distuv"
)

// bruteMannWhitneyP is the two-sided exact p of U for b over a, conditional
// on the ties, by enumerating every way of splitting the pooled values into
// samples of the two sizes: the definition pAt must match.
func bruteMannWhitneyP(a, b []float64) float64 {
	pooled := slices.Concat(a, b)
	ustat := func(x, y []float64) float64 {
		u := 0.0
		for _, xi := range x {
			for _, yj := range y {
				switch {
				case yj > xi:
					u++
				case yj == xi:
					u += 0.5
				}
			}
		}
		return u
	}
	obs := ustat(a, b)
	var lower, upper, total float64
	for _, idx := range combin.Combinations(len(pooled), len(b)) {
		var x, y []float64
		for i, v := range pooled {
			if slices.Contains(idx, i) {
				y = append(y, v)
			} else {
				x = append(x, v)
			}
		}
		u := ustat(x, y)
		total++
		if u <= obs+1e-9 {
			lower++
		}
		if u >= obs-1e-9 {
			upper++
		}
	}
	return min(1, 2*min(lower, upper)/total)
}

// TestMannWhitneyTiesExact: the p-value is the exact permutation
// distribution conditional on the ties, checked against full enumeration.
func TestMannWhitneyTiesExact(t *testing.T) {
	for _, tc := range []struct{ a, b []float64 }{
		{[]float64{100, 101, 102, 103}, []float64{103, 104, 105, 106}}, // the tie of the issue
		{[]float64{100, 100, 101, 102}, []float64{102, 103, 103, 104}},
		{[]float64{1, 1, 1, 2, 2}, []float64{2, 2, 3, 3, 3}},
		{[]float64{5, 6, 7, 8}, []float64{1, 2, 3, 4, 9}},
		{[]float64{10, 10, 10, 10}, []float64{10, 10, 10, 11}},
		{[]float64{1, 2, 3, 4, 5, 6}, []float64{3, 4, 5, 6, 7, 8}},
	} {
		mw := newMannWhitney(logs(tc.a), logs(tc.b))
		got, want := mw.pAt(0), bruteMannWhitneyP(logs(tc.a), logs(tc.b))
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("p(%v vs %v) = %v, want %v (enumeration)", tc.a, tc.b, got, want)
		}
	}
}

// TestTiesVerdictAndInterval is the audit's case: a = 100..103 and b =
// 103..106 tie at 103. Without the ties the exact p was 2/70 and the
// interval's lower end exactly 0 beside a verdict of faster; given the tie,
// p is 4/70 and the interval holds 0.
func TestTiesVerdictAndInterval(t *testing.T) {
	runs := unpairedRuns([]float64{100, 101, 102, 103}, []float64{103, 104, 105, 106})
	cells, _, err := Summarize(ab(), []int{1}, runs, Analysis{Alpha: 0.05, Paired: false, Correction: CorrectionNone})
	if err != nil {
		t.Fatal(err)
	}
	cmp := cells[0].Comparisons[0]
	if math.Abs(cmp.PValue-4.0/70) > 1e-12 {
		t.Errorf("p = %v, want 4/70 = %v", cmp.PValue, 4.0/70)
	}
	if cmp.Verdict != VerdictNoDifference || cmp.CILowPct == nil || !(*cmp.CILowPct <= 0 && 0 <= *cmp.CIHighPct) {
		t.Errorf("verdict %s with interval %s, want no-difference with an interval holding 0", cmp.Verdict, ciText(cmp))
	}
	checkAgreement(t, cmp, 0.05)
}

func unpairedRuns(a, b []float64) []Run {
	var runs []Run
	for i, v := range a {
		runs = append(runs, Run{Seq: len(runs) + 1, Variant: "stock", Clients: 1, Iteration: i + 1, TPS: v, Seconds: 10, StartedAt: t0.Add(time.Duration(len(runs)) * time.Minute)})
	}
	for i, v := range b {
		runs = append(runs, Run{Seq: len(runs) + 1, Variant: "patched", Clients: 1, Iteration: i + 1, TPS: v, Seconds: 10, StartedAt: t0.Add(time.Duration(len(runs)) * time.Minute)})
	}
	return runs
}

// checkAgreement: the verdict is significant exactly when the interval
// excludes 0 strictly.
func checkAgreement(t *testing.T, cmp Comparison, alpha float64) {
	t.Helper()
	if cmp.CILowPct == nil {
		return
	}
	sig := cmp.Verdict == VerdictFaster || cmp.Verdict == VerdictSlower
	if excl := *cmp.CILowPct > 0 || *cmp.CIHighPct < 0; excl != sig {
		t.Errorf("verdict %s (p adjusted %v) but interval %v .. %v", cmp.Verdict, cmp.PAdjusted, *cmp.CILowPct, *cmp.CIHighPct)
	}
	if sig != (cmp.PAdjusted <= alpha) {
		t.Errorf("verdict %s with adjusted p %v at alpha %v", cmp.Verdict, cmp.PAdjusted, alpha)
	}
}

// TestSimulationTies runs unpaired campaigns whose TPS is printed with
// few digits, so runs tie within and across the variants: the false
// positives stay at most alpha, the intervals cover, and the verdict and
// the interval never disagree.
func TestSimulationTies(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: skipped with -short")
	}
	for _, tc := range []struct {
		n      int
		effect float64
	}{{4, 0}, {5, 0}, {6, 0}, {6, 3}} {
		t.Run(fmt.Sprintf("n=%d/effect=%g%%", tc.n, tc.effect), func(t *testing.T) {
			// CV 2% of 10000 TPS rounded to 100: about five distinct values.
			r := simulate(t, simSpec{pairs: tc.n, cells: 1, cv: 0.02, effectPct: tc.effect, resolution: 100}, simCampaigns/10, uint64(tc.n)*13)
			if tc.effect == 0 {
				within(t, "A/A false-positive rate with ties", r.rate(r.significant), 0, 0.06)
			}
			within(t, "coverage with ties", r.rate(r.covered), 0.94, 1)
			if r.disagree != 0 {
				t.Errorf("%d comparisons where the verdict and the interval disagree, want 0", r.disagree)
			}
		})
	}
}

// TestUnreachableDesign is the audit's case: randomized order, 4 runs per
// side, two client counts. The smallest Mann-Whitney p is 2/70, 4/70 after
// Holm: a candidate twice as fast cannot be called, so the comparison
// says the design cannot reach significance, gives no MDE, and names 5
// runs per side (2 x 2/252 < 0.05).
func TestUnreachableDesign(t *testing.T) {
	a := []float64{100, 101, 99, 100.5}
	b := []float64{200, 202, 198, 201}
	runs := abRuns([]int{1, 2}, map[string]map[int][]float64{"stock": {1: a, 2: a}, "patched": {1: b, 2: b}}, "stock", "patched")
	an := AnalysisFor("randomized", 0.05)
	cells, warnings, err := Summarize(ab(), []int{1, 2}, runs, an)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range cells {
		cmp := cell.Comparisons[0]
		if !cmp.Unreachable || cmp.MDEPct != nil || cmp.FewestPerSide != 5 || cmp.Verdict != VerdictNoDifference {
			t.Errorf("clients=%d: unreachable %v, MDE %v, fewest %d, verdict %s: want unreachable, no MDE, 5 runs, no-difference",
				cell.Clients, cmp.Unreachable, cmp.MDEPct, cmp.FewestPerSide, cmp.Verdict)
		}
		if !strings.Contains(cmp.Note, "cannot reach significance") || !strings.Contains(cmp.Note, "0.0571") {
			t.Errorf("note = %q, want it to name the design and the smallest adjusted p 0.0571", cmp.Note)
		}
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "5 runs per variant") {
		t.Errorf("warnings = %q, want the fewest runs named", warnings)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, &Results{Variants: ab(), Cells: cells, Alpha: 0.05, Method: an.Method(), Correction: an.CorrectionName(), Warnings: warnings}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| unreachable |") || !strings.Contains(md.String(), "design cannot reach significance") {
		t.Errorf("summary.md does not say the design is unreachable:\n%s", md.String())
	}

	for _, tc := range []struct {
		paired      bool
		n, m        int
		unreachable bool
		fewest      int
	}{{false, 4, 2, true, 5}, {false, 4, 1, false, 4}, {false, 5, 2, false, 5}, {false, 5, 8, true, 6}, {true, 3, 8, false, 0}} {
		an := AnalysisFor("randomized", 0.05)
		an.Paired = tc.paired
		minAdj, fewest, unreachable := UnreachableDesign(an, tc.n, tc.m)
		if unreachable != tc.unreachable || fewest != tc.fewest {
			t.Errorf("UnreachableDesign(paired %v, %d per side, %d comparisons) = %v, %d, %v; want unreachable %v, fewest %d",
				tc.paired, tc.n, tc.m, minAdj, fewest, unreachable, tc.unreachable, tc.fewest)
		}
	}
	// Five runs per side reach significance with the same two cells.
	a5, b5 := append(a, 100.2), append(b, 199)
	runs = abRuns([]int{1, 2}, map[string]map[int][]float64{"stock": {1: a5, 2: a5}, "patched": {1: b5, 2: b5}}, "stock", "patched")
	cells, _, err = Summarize(ab(), []int{1, 2}, runs, an)
	if err != nil {
		t.Fatal(err)
	}
	if cmp := cells[0].Comparisons[0]; cmp.Unreachable || cmp.Verdict != VerdictFaster || cmp.MDEPct == nil {
		t.Errorf("5 per side: unreachable %v, verdict %s, MDE %v: want a reachable design calling faster", cmp.Unreachable, cmp.Verdict, cmp.MDEPct)
	}
}

// TestMinAdjusted checks the smallest attainable Holm-adjusted p against
// a search over every ordering of the comparisons at their floors.
func TestMinAdjusted(t *testing.T) {
	for _, floors := range [][]float64{{0.029, 0.029}, {0, 0.029, 0.029}, {0.008, 0.029, 0.1}, {0, 0, 0.02}, {0.01, 0.01, 0.01, 0.2}} {
		for k := range floors {
			best := 1.0
			// Every subset of the others before k, each at its floor, in
			// ascending order; the rest after k cannot matter.
			others := slices.Delete(slices.Clone(floors), k, k+1)
			for mask := range 1 << len(others) {
				var before []float64
				for i, f := range others {
					if mask&(1<<i) != 0 {
						before = append(before, f)
					}
				}
				slices.Sort(before)
				adj := 0.0
				for j, f := range before {
					adj = max(adj, float64(len(floors)-j)*f)
				}
				adj = max(adj, float64(len(floors)-len(before))*floors[k])
				best = min(best, adj)
			}
			if got := minAdjusted(floors, k, true); math.Abs(got-best) > 1e-15 {
				t.Errorf("minAdjusted(%v, %d) = %v, want %v", floors, k, got, best)
			}
		}
	}
}

// TestNoncentralTPower checks the integral behind the MDE against a direct
// simulation of the noncentral t, (Z + ncp) / sqrt(V/nu).
func TestNoncentralTPower(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for _, nu := range []float64{2, 4, 9, 30} {
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975)
		chi := distuv.ChiSquared{K: nu, Src: rng}
		for _, ncp := range []float64{0, 1, 2.5, 4} {
			const n = 200000
			hits := 0
			for range n {
				tv := (rng.NormFloat64() + ncp) / math.Sqrt(chi.Rand()/nu)
				if math.Abs(tv) > q {
					hits++
				}
			}
			sim := float64(hits) / n
			got := noncentralTPower(ncp, q, chiScale(nu))
			if se := math.Sqrt(sim * (1 - sim) / n); math.Abs(got-sim) > 4*se+2e-4 {
				t.Errorf("power(nu=%g, ncp=%g) = %.5f, simulation %.5f ± %.5f", nu, ncp, got, sim, se)
			}
		}
	}
	// The MDE's noncentrality gives exactly the target power.
	for _, nu := range []float64{2, 9} {
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975)
		if got := noncentralTPower(mdeNoncentrality(0.05, nu), q, chiScale(nu)); math.Abs(got-power) > 1e-6 {
			t.Errorf("power at the MDE's noncentrality (nu=%g) = %v, want %v", nu, got, power)
		}
	}
}

// simCounters simulates campaigns whose runs carry counters: most are
// noise (a run-level wobble shared by all counters and each counter's
// own), some change by factor for the candidate. It gives the share of
// campaigns whose "what differed" lists any null counter, and the share
// that list each changed counter.
func simCounters(t *testing.T, paired bool, n, nulls int, changed map[string]float64, campaigns int, seed uint64) (anyNull float64, found map[string]float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	found = map[string]float64{}
	an := AnalysisFor("alternate", 0.05)
	if !paired {
		an = AnalysisFor("randomized", 0.05)
	}
	listed := 0
	for range campaigns {
		var runs []Run
		spec := simSpec{pairs: n, cells: 2, paired: paired}
		for _, c := range []int{1, 2} {
			for _, v := range cellOrder(spec, rng) {
				run := Run{Seq: len(runs) + 1, Variant: v.name, Clients: c, Iteration: v.iteration, TPS: 10000 * math.Exp(0.02*rng.NormFloat64()), Seconds: 60,
					Transactions: 600000, Counters: map[string]float64{}}
				wobble := 0.05 * rng.NormFloat64()
				for i := range nulls {
					run.Counters[fmt.Sprintf("os.null%02d", i)] = 600000 * math.Exp(float64(i%5)+wobble+0.1*rng.NormFloat64())
				}
				run.Counters["os.sparse"] = math.Max(0, math.Round(rng.NormFloat64())) // mostly 0 or 1
				for name, f := range changed {
					x := 600000 * math.Exp(wobble+0.1*rng.NormFloat64())
					if v.name == "patched" {
						x *= f
					}
					run.Counters[name] = x
				}
				runs = append(runs, run)
			}
		}
		cells, _, err := Summarize(ab(), []int{1, 2}, runs, an)
		if err != nil {
			t.Fatal(err)
		}
		anyN := false
		for _, cell := range cells {
			for _, d := range cell.Comparisons[0].Differed {
				if _, ok := changed[strings.TrimSuffix(d.Name, "/tx")]; ok {
					found[d.Name] += 1.0 / float64(2*campaigns)
				} else {
					anyN = true
				}
			}
		}
		if anyN {
			listed++
		}
	}
	return float64(listed) / float64(campaigns), found
}

// TestSimulationCounters: an A/A campaign with 40 noisy counters (10%
// noise each, 5% shared by a run's counters) lists no counter in "what
// differed" in at least 94% of campaigns (Holm across every counter of the
// campaign), paired and unpaired, and beside real changes lists no null
// counter either; a counter that triples is listed 90% of the time or more at 5
// runs per side (the paired t has 4 degrees of freedom there).
func TestSimulationCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: skipped with -short")
	}
	for _, paired := range []bool{true, false} {
		t.Run(fmt.Sprintf("paired=%v", paired), func(t *testing.T) {
			aa, _ := simCounters(t, paired, 5, 40, nil, 2000, 31)
			within(t, "A/A campaigns listing any counter", aa, 0, 0.06)
			anyNull, found := simCounters(t, paired, 5, 40, map[string]float64{"pg.tup_returned": 3, "pg.blks_hit": 1.3}, 1000, 37)
			within(t, "campaigns listing a null counter beside real changes", anyNull, 0, 0.06)
			within(t, "tripled counter listed", found["pg.tup_returned/tx"], 0.90, 1)
			t.Logf("+30%% counter listed in %.1f%% of comparisons", found["pg.blks_hit/tx"]*100)
		})
	}
}

func TestPValueText(t *testing.T) {
	for _, tc := range []struct {
		p, alpha float64
		want     string
	}{{0.0504, 0.05, "0.0504"}, {0.05004, 0.05, "0.05004"}, {0.05, 0.05, "0.05"}, {0.0496, 0.05, "0.0496"}, {0.2546930884175301, 0.05, "0.255"}, {0.0004, 0.05, "<0.001"}, {1, 0.05, "1"}} {
		if got := PValueText(tc.p, tc.alpha); got != tc.want {
			t.Errorf("PValueText(%v, %v) = %q, want %q", tc.p, tc.alpha, got, tc.want)
		}
	}
}

func TestSignedPct(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0.004, "+0.004%"}, {-0.0004, "-0.0004%"}, {1.234, "+1.23%"}, {0, "+0.00%"}, {0.0000001, "+1e-07%"}} {
		if got := signedPct(tc.v); got != tc.want {
			t.Errorf("signedPct(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
