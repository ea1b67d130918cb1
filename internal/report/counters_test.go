package report

import (
	"math"
	"strings"
	"testing"
)

// TestDiffered checks the ranking behind "what differed": per transaction,
// largest change first whichever its sign, counters missing on one side or
// zero on both left out.
func TestDiffered(t *testing.T) {
	runs := abRuns([]int{8}, map[string]map[int][]float64{
		"stock":   {8: {1000, 1010, 990, 1005}},
		"patched": {8: {500, 505, 495, 502}},
	}, "stock", "patched")
	for i := range runs {
		r := &runs[i]
		r.Transactions = int64(r.TPS * r.Seconds)
		// Real counters vary from run to run: a run's own wobble of a few
		// percent, the same for all its counters.
		tx := float64(r.Transactions) * (1 + 0.02*float64((i*7)%5-2))
		r.Counters = map[string]float64{
			"pg.tup_returned":     tx * 1,
			"pg.blks_hit":         tx * 4,
			"os.context_switches": tx * 2,
			"pg.deadlocks":        0,
			"wait.CPU":            0.9 + 0.01*float64(i%3),
			"wait.samples":        100,
		}
		if r.Variant == "patched" {
			r.Counters["pg.tup_returned"] = tx * 100000
			r.Counters["pg.blks_hit"] = tx * 1640
			r.Counters["wait.LWLock:BufferContent"] = 0.3
			r.Counters["wait.CPU"] = 0.6 + 0.01*float64(i%3)
		}
		r.Client = &ClientCPU{CPUSeconds: 1, WallSeconds: 10, Threads: 2, AllowedCPUs: 2, Share: 0.05}
	}
	cells, warns, err := Summarize(ab(), []int{8}, runs, AnalysisFor("alternate", 0.05))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	vc := cells[0].Variants["patched"]
	if got := vc.CountersCompared["pg.tup_returned/tx"]; math.Abs(got-1e5) > 1e-6 {
		t.Errorf("patched tup_returned/tx = %g, want 1e5", got)
	}
	if got := vc.Counters["pg.blks_hit"]; got <= 0 {
		t.Errorf("raw median of blks_hit = %g", got)
	}
	d := cells[0].Comparisons[0].Differed
	var names []string
	for _, x := range d {
		names = append(names, x.Name)
	}
	want := []string{"pg.tup_returned/tx", "pg.blks_hit/tx", "wait.LWLock:BufferContent"}
	if len(names) < 3 || strings.Join(names[:2], ",") != strings.Join(want[:2], ",") {
		t.Fatalf("differed = %v, want it to start with %v", names, want[:2])
	}
	for _, n := range names {
		if n == "pg.deadlocks/tx" || n == "wait.samples" || strings.HasPrefix(n, "wait.LWLock") {
			t.Errorf("differed lists %s, which one side lacks or both have at 0", n)
		}
		if n == "os.context_switches/tx" {
			t.Errorf("differed lists %s, which is the same per transaction", n)
		}
	}
	if d[0].Ratio < 1e4 {
		t.Errorf("tup_returned ratio %g, want about 1e5", d[0].Ratio)
	}

	res := &Results{Variants: ab(), Cells: cells, Workload: Workload{Mode: "select-only"}}
	var b strings.Builder
	if err := WriteMarkdown(&b, res); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !strings.Contains(md, "## What differed") || !strings.Contains(md, "| `pg.tup_returned/tx` | PostgreSQL |") {
		t.Errorf("summary.md lacks the what-differed table:\n%s", md)
	}
}

func TestClientBoundWarns(t *testing.T) {
	runs := abRuns([]int{4}, map[string]map[int][]float64{
		"stock":   {4: {100, 101, 99}},
		"patched": {4: {100, 101, 99}},
	}, "stock", "patched")
	runs[0].ClientBound = true
	runs[3].ClientBound = true // stock again: AB BA
	cells, warns, err := Summarize(ab(), []int{4}, runs, AnalysisFor("alternate", 0.05))
	if err != nil {
		t.Fatal(err)
	}
	if n := cells[0].Variants[runs[0].Variant].ClientBoundRuns; n != 2 {
		t.Errorf("ClientBoundRuns = %d, want 2", n)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "2 of 3 runs of variant "+runs[0].Variant+" were client-bound") {
		t.Errorf("warnings = %q, want one naming 2 of 3 client-bound runs", warns)
	}
}
