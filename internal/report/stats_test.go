package report

import (
	"math"
	"strings"
	"testing"
	"time"
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
		{name: "identical samples", a: []float64{100, 100, 100, 100, 100}, b: []float64{100, 100, 100, 100, 100}, verdict: VerdictNoDifference, minP: 0.05, wantNote: true, wantWarned: "no spread"},
		{name: "every pair the same ratio", a: []float64{100, 101, 99, 100.5, 99.5}, b: []float64{200, 202, 198, 201, 199}, verdict: VerdictNoDifference, minP: 0.05, wantNote: true, wantWarned: "no spread"},
		{name: "same values shuffled", a: []float64{101, 99, 100, 102, 98}, b: []float64{98, 102, 100, 99, 101}, verdict: VerdictNoDifference, minP: 0.5, wantCI: true},
		{name: "candidate clearly faster 5v5", a: []float64{100, 101, 99, 100.5, 99.5}, b: []float64{120, 121, 119, 120.5, 119.5}, verdict: VerdictFaster, maxP: 0.05, wantCI: true},
		{name: "candidate clearly slower 5v5", a: []float64{100, 101, 99, 100.5, 99.5}, b: []float64{80, 81, 79, 80.5, 79.5}, verdict: VerdictSlower, maxP: 0.05, wantCI: true},
		{name: "2 pairs give no test", a: []float64{100, 101}, b: []float64{200, 201}, verdict: VerdictNoDifference, minP: 0.05, wantNote: true, wantWarned: "at least 3"},
		{name: "3 pairs can reach significance", a: []float64{100, 101, 99}, b: []float64{200, 201, 199}, verdict: VerdictFaster, maxP: 0.01, wantCI: true},
		{name: "8v8 has a finite interval", a: []float64{100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1}, b: []float64{110, 111, 109, 110.5, 109.5, 110.2, 109.8, 110.1}, verdict: VerdictFaster, maxP: 0.01, wantCI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := abRuns([]int{4}, map[string]map[int][]float64{"stock": {4: tt.a}, "patched": {4: tt.b}}, "stock", "patched")
			cells, warnings, err := Summarize(ab(), []int{4}, runs, Analysis{Alpha: 0.05, Paired: true})
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
	cells, warnings, err := Summarize(ab(), []int{1, 16}, runs, Analysis{Alpha: 0.05, Paired: true})
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
		// The geometric mean of the pairs' ratios 200/a_i.
		{"delta", cells[0].Comparisons[0].DeltaPct, (math.Pow(200*200*200*200*200/(130.0*100*120*110*140), 0.2) - 1) * 100},
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
		an       Analysis
		want     string
	}{
		{"unknown variant", ab(), []int{1}, append(good, Run{Seq: 9, Variant: "other", Clients: 1, TPS: 1}), Analysis{Alpha: 0.05}, `unknown variant "other"`},
		{"unknown clients", ab(), []int{1}, append(good, Run{Seq: 9, Variant: "stock", Clients: 8, TPS: 1}), Analysis{Alpha: 0.05}, "client count 8"},
		{"no variants", nil, []int{1}, nil, Analysis{Alpha: 0.05}, "no variants"},
		{"duplicate variant", []Variant{{Name: "a"}, {Name: "a"}}, []int{1}, nil, Analysis{Alpha: 0.05}, `"a" given twice`},
		{"bad alpha", ab(), []int{1}, good, Analysis{}, "alpha"},
		{"unknown correction", ab(), []int{1}, good, Analysis{Alpha: 0.05, Correction: "bonferroni"}, `unknown correction "bonferroni"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Summarize(tt.variants, tt.clients, tt.runs, tt.an)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestSummarizeLeavesOutInvalidRuns: a run with TPS 0, NaN or Inf is left
// out of the statistics with a warning naming it, not an error that loses
// every other run.
func TestSummarizeLeavesOutInvalidRuns(t *testing.T) {
	a, b := []float64{100, 101, 99, 100.5, 99.5, 100.2}, []float64{110, 111, 109, 110.5, 109.5, 110.2}
	runs := abRuns([]int{1}, map[string]map[int][]float64{"stock": {1: a}, "patched": {1: b}}, "stock", "patched")
	// AB BA AB ...: run 2 is patched's iteration 1, run 5 stock's 3, run 9
	// stock's 5.
	runs[1].TPS = math.NaN()
	runs[4].TPS = 0
	runs[8].TPS = math.Inf(1)
	cells, warnings, err := Summarize(ab(), []int{1}, runs, AnalysisFor("alternate", 0.05))
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if cmp := cells[0].Comparisons[0]; cmp.NBaseline != 3 || cmp.Verdict != VerdictFaster {
		t.Errorf("pairs used = %d, verdict %s; want the 3 whose runs are both valid, faster", cmp.NBaseline, cmp.Verdict)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"run 2 (patched, iteration 1) has invalid tps NaN", "run 5 (stock, iteration 3) has invalid tps 0", "run 9 (stock, iteration 5) has invalid tps +Inf"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings = %q, want one containing %q", warnings, want)
		}
	}
}

func TestSummarizePartial(t *testing.T) {
	// A campaign interrupted after the first runs: the missing variant has
	// an empty cell and no comparison is made.
	runs := []Run{{Seq: 1, Variant: "stock", Clients: 1, Iteration: 1, TPS: 10}}
	cells, warnings, err := Summarize(ab(), []int{1, 2}, runs, Analysis{Alpha: 0.05, Paired: true})
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
