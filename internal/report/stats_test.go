package report

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchmath"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// abRuns lays out runs alternating A and B at each client count, as the
// campaign's alternate order does, with TPS taken from the given tables.
func abRuns(clients []int, tps map[string]map[int][]float64, names ...string) []Run {
	var runs []Run
	seq := 0
	iters := len(tps[names[0]][clients[0]])
	for _, c := range clients {
		for it := 0; it < iters; it++ {
			order := names
			if it%2 == 1 {
				order = []string{names[1], names[0]}
			}
			for _, n := range order {
				seq++
				runs = append(runs, Run{
					Seq: seq, Variant: n, Clients: c, Iteration: it + 1, TPS: tps[n][c][it],
					StartedAt: t0.Add(time.Duration(seq) * time.Minute), Seconds: 10,
					LatencyMS: Latency{Avg: 1000 * float64(c) / tps[n][c][it]},
				})
			}
		}
	}
	return runs
}

func ab() []Variant { return []Variant{{Name: "stock"}, {Name: "patched"}} }

func TestSummarizeVerdicts(t *testing.T) {
	tests := []struct {
		name       string
		a, b       []float64
		verdict    string
		maxP       float64 // 0: not checked
		minP       float64
		wantNote   bool
		wantCI     bool
		wantWarned string
	}{
		{name: "identical samples", a: []float64{100, 100, 100, 100, 100}, b: []float64{100, 100, 100, 100, 100}, verdict: VerdictNoDifference, minP: 0.05},
		{name: "same values shuffled", a: []float64{101, 99, 100, 102, 98}, b: []float64{98, 102, 100, 99, 101}, verdict: VerdictNoDifference, minP: 0.5},
		{name: "candidate clearly faster 5v5", a: []float64{100, 101, 99, 100.5, 99.5}, b: []float64{120, 121, 119, 120.5, 119.5}, verdict: VerdictFaster, maxP: 0.05},
		{name: "candidate clearly slower 5v5", a: []float64{100, 101, 99, 100.5, 99.5}, b: []float64{80, 81, 79, 80.5, 79.5}, verdict: VerdictSlower, maxP: 0.05},
		{name: "3v3 cannot reach significance", a: []float64{100, 101, 99}, b: []float64{200, 201, 199}, verdict: VerdictNoDifference, minP: 0.05, wantNote: true, wantWarned: "at least 4 iterations"},
		{name: "8v8 has a finite interval", a: []float64{100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1}, b: []float64{110, 111, 109, 110.5, 109.5, 110.2, 109.8, 110.1}, verdict: VerdictFaster, maxP: 0.01, wantCI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := abRuns([]int{4}, map[string]map[int][]float64{"stock": {4: tt.a}, "patched": {4: tt.b}}, "stock", "patched")
			cells, warnings, err := Summarize(ab(), []int{4}, runs, 0.05)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			if got, want := len(cells), 1; got != want {
				t.Fatalf("len(cells) = %d, want %d", got, want)
			}
			if got, want := len(cells[0].Comparisons), 1; got != want {
				t.Fatalf("len(comparisons) = %d, want %d", got, want)
			}
			cmp := cells[0].Comparisons[0]
			if cmp.Baseline != "stock" || cmp.Candidate != "patched" {
				t.Fatalf("comparison = %s vs %s, want patched vs stock", cmp.Candidate, cmp.Baseline)
			}
			if cmp.Verdict != tt.verdict {
				t.Errorf("verdict = %q (p=%v), want %q", cmp.Verdict, cmp.PValue, tt.verdict)
			}
			if tt.maxP > 0 && !(cmp.PValue < tt.maxP) {
				t.Errorf("p = %v, want < %v", cmp.PValue, tt.maxP)
			}
			if tt.minP > 0 && !(cmp.PValue >= tt.minP) {
				t.Errorf("p = %v, want >= %v", cmp.PValue, tt.minP)
			}
			if got := cmp.Note != ""; got != tt.wantNote {
				t.Errorf("note = %q, want a note: %v", cmp.Note, tt.wantNote)
			}
			if tt.wantWarned != "" && !strings.Contains(strings.Join(warnings, "\n"), tt.wantWarned) {
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarned)
			}
			if got := cmp.CILowPct != nil && cmp.CIHighPct != nil; got != tt.wantCI {
				t.Errorf("finite CI = %v, want %v", got, tt.wantCI)
			}
			if cmp.CILowPct != nil && cmp.CIHighPct != nil && !(*cmp.CILowPct <= cmp.DeltaPct && cmp.DeltaPct <= *cmp.CIHighPct) {
				t.Errorf("delta %v outside its CI [%v, %v]", cmp.DeltaPct, *cmp.CILowPct, *cmp.CIHighPct)
			}
			for name, vc := range cells[0].Variants {
				if !(vc.MinTPS <= vc.MedianTPS && vc.MedianTPS <= vc.MaxTPS) {
					t.Errorf("%s: median %v not within [%v, %v]", name, vc.MedianTPS, vc.MinTPS, vc.MaxTPS)
				}
			}
		})
	}
}

func TestSummarizeStatistics(t *testing.T) {
	// Odd counts make the median, quartiles and CV easy to check by hand.
	a := []float64{130, 100, 120, 110, 140}
	b := []float64{200, 200, 200, 200, 200}
	runs := abRuns([]int{1, 16}, map[string]map[int][]float64{
		"stock":   {1: a, 16: a},
		"patched": {1: b, 16: b},
	}, "stock", "patched")
	runs[0].Drift = true
	runs[0].FailedTransactions = 3
	for i := range runs {
		runs[i].LatencyMS.P99 = float64(runs[i].Seq)
	}
	runs[2].LatencyMS.P99 = 0 // a run without a log must not count
	cells, warnings, err := Summarize(ab(), []int{1, 16}, runs, 0.05)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if got, want := cells[0].Clients, 1; got != want {
		t.Fatalf("cells[0].Clients = %d, want %d", got, want)
	}
	s := cells[0].Variants["stock"]
	if got, want := s.TPS, a; !equalFloats(got, want) {
		t.Errorf("tps = %v, want %v (run order)", got, want)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"median", s.MedianTPS, 120},
		{"min", s.MinTPS, 100},
		{"max", s.MaxTPS, 140},
		{"iqr (Hyndman-Fan R8 quartiles 106.67 and 133.33)", s.IQRTPS, 80.0 / 3},
		{"cv", s.CV, math.Sqrt(250) / 120},
		{"patched cv", cells[0].Variants["patched"].CV, 0},
		{"delta", cells[0].Comparisons[0].DeltaPct, (200.0/120 - 1) * 100},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got, want := s.DriftingRuns, 1; got != want {
		t.Errorf("drifting runs = %d, want %d", got, want)
	}
	// stock runs at clients=1 have seqs 1,4,5,8,9; seq 1 keeps p99=1 but
	// run index 2 (seq 3) is patched, so stock's p99 values are 1,4,5,8,9.
	if got, want := s.LatencyMS.P99, 5.0; got != want {
		t.Errorf("p99 = %v, want %v", got, want)
	}
	// patched at clients=1: seqs 2,3,6,7,10 with seq 3 having no log.
	if got, want := cells[0].Variants["patched"].LatencyMS.P99, 6.5; got != want {
		t.Errorf("patched p99 = %v, want %v (median of 2,6,7,10)", got, want)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"drifted", "3 failed transactions"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings = %q, want one containing %q", warnings, want)
		}
	}
}

func TestSummarizeErrors(t *testing.T) {
	good := abRuns([]int{1}, map[string]map[int][]float64{"stock": {1: {1, 2}}, "patched": {1: {1, 2}}}, "stock", "patched")
	tests := []struct {
		name     string
		variants []Variant
		clients  []int
		runs     []Run
		alpha    float64
		want     string
	}{
		{"unknown variant", ab(), []int{1}, append(good, Run{Seq: 9, Variant: "other", Clients: 1, TPS: 1}), 0.05, `unknown variant "other"`},
		{"unknown clients", ab(), []int{1}, append(good, Run{Seq: 9, Variant: "stock", Clients: 8, TPS: 1}), 0.05, "client count 8"},
		{"no variants", nil, []int{1}, nil, 0.05, "no variants"},
		{"duplicate variant", []Variant{{Name: "a"}, {Name: "a"}}, []int{1}, nil, 0.05, `"a" given twice`},
		{"bad alpha", ab(), []int{1}, good, 0, "alpha"},
		{"nan tps", ab(), []int{1}, append(good, Run{Seq: 9, Variant: "stock", Clients: 1, TPS: math.NaN()}), 0.05, "invalid tps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Summarize(tt.variants, tt.clients, tt.runs, tt.alpha)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSummarizePartial(t *testing.T) {
	// A campaign interrupted after the first runs: the missing variant has
	// an empty cell and no comparison is made.
	runs := []Run{{Seq: 1, Variant: "stock", Clients: 1, Iteration: 1, TPS: 10}}
	cells, warnings, err := Summarize(ab(), []int{1, 2}, runs, 0.05)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if got, want := len(cells[0].Comparisons), 0; got != want {
		t.Errorf("comparisons = %d, want %d", got, want)
	}
	if got, want := len(cells[1].Variants["stock"].TPS), 0; got != want {
		t.Errorf("tps at clients=2 = %d values, want %d", got, want)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "no runs for variant patched") {
		t.Errorf("warnings = %q, want one about patched having no runs", warnings)
	}
}

func TestSmallestP(t *testing.T) {
	// The U test's smallest p for completely separated samples of n vs n
	// is 2/C(2n, n) (two-sided): 0.1 for 3v3, 0.0286 for 4v4.
	tests := []struct {
		n1, n2 int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {2, 5, 2.0 / 21}}
	for _, tt := range tests {
		if got := smallestP(tt.n1, tt.n2, 0.05); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("smallestP(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.want)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRatioCI(t *testing.T) {
	inf := math.Inf(1)
	pct := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		name       string
		base, cand benchmath.Summary
		lo, hi     *float64
	}{
		{"finite", benchmath.Summary{Lo: 90, Hi: 110}, benchmath.Summary{Lo: 99, Hi: 121}, pct(-10), pct(34.444444444444443)},
		// Unequal n: the baseline has no finite interval, the candidate has.
		{"baseline infinite", benchmath.Summary{Lo: math.Inf(-1), Hi: inf}, benchmath.Summary{Lo: 99, Hi: 121}, nil, nil},
		{"candidate high infinite", benchmath.Summary{Lo: 90, Hi: 110}, benchmath.Summary{Lo: 99, Hi: inf}, nil, nil},
		{"baseline low NaN", benchmath.Summary{Lo: math.NaN(), Hi: 110}, benchmath.Summary{Lo: 99, Hi: 121}, nil, nil},
		{"zero baseline low", benchmath.Summary{Lo: 0, Hi: 110}, benchmath.Summary{Lo: 99, Hi: 121}, nil, nil},
	} {
		lo, hi := ratioCI(tt.base, tt.cand)
		if !samePct(lo, tt.lo) || !samePct(hi, tt.hi) {
			t.Errorf("%s: ratioCI = [%v, %v], want [%v, %v]", tt.name, fmtPct(lo), fmtPct(hi), fmtPct(tt.lo), fmtPct(tt.hi))
		}
	}
}

func samePct(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) < 1e-9
}

func fmtPct(p *float64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}
