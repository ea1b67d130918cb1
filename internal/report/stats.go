package report

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// Verdicts of a Comparison.
const (
	VerdictFaster       = "faster"
	VerdictSlower       = "slower"
	VerdictNoDifference = "no-difference"
)

// Confidence is the confidence level of Comparison.CILowPct/CIHighPct.
const Confidence = 0.95

// maxIterationsHint bounds the search for the iteration count that could
// reach significance; past it the answer is just "more".
const maxIterationsHint = 50

// Summarize computes one Cell per client count from the runs of a campaign.
// The baseline is variants[0]; every other variant is a candidate compared
// with it. Runs may be a partial campaign (a resumed one still running): a
// variant without runs at a client count gets an empty VariantCell and no
// comparison, and a warning says so.
//
// Statistics come from golang.org/x/perf/benchmath with AssumeNothing, as
// benchstat does by default, because TPS across iterations is rarely normal:
//
//   - MedianTPS is benchmath's median; MinTPS, MaxTPS, IQRTPS and CV
//     (sample standard deviation / mean) come from go-moremath, the library
//     benchmath is built on; its quartiles use Hyndman and Fan's method R8.
//   - PValue is the two-sided Mann-Whitney U test of benchmath's Compare.
//     The verdict is significant when PValue <= alpha (benchstat's rule):
//     "faster" when the candidate's median is higher, "slower" when lower,
//     "no-difference" otherwise.
//   - DeltaPct is the difference of medians in percent. Its interval is the
//     conservative one built from the two per-sample median intervals,
//     [cand.Lo/base.Hi - 1, cand.Hi/base.Lo - 1]. Each per-sample interval
//     is taken at sqrt(0.95) so that both hold together with probability at
//     least 0.95 (the samples are independent), which makes the delta
//     interval a true 95% interval rather than roughly 90%. Small samples
//     have no finite median interval; such bounds are nil. With this rule
//     at least 7 iterations per variant give a finite interval.
//   - When n1 and n2 are too small for even completely separated samples
//     to reach alpha (3 vs 3 cannot go below p = 0.1), Comparison.Note says
//     so and a warning names the iteration count that would be needed.
func Summarize(variants []Variant, clients []int, runs []Run, alpha float64) ([]Cell, []string, error) {
	if len(variants) == 0 {
		return nil, nil, errors.New("summarize: no variants")
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, nil, fmt.Errorf("summarize: alpha %v is not between 0 and 1", alpha)
	}
	known := make(map[string]bool, len(variants))
	for _, v := range variants {
		if v.Name == "" {
			return nil, nil, errors.New("summarize: variant with an empty name")
		}
		if known[v.Name] {
			return nil, nil, fmt.Errorf("summarize: variant %q given twice", v.Name)
		}
		known[v.Name] = true
	}
	cellIndex := make(map[int]int, len(clients))
	for i, c := range clients {
		if c <= 0 {
			return nil, nil, fmt.Errorf("summarize: client count %d is not positive", c)
		}
		if _, dup := cellIndex[c]; dup {
			return nil, nil, fmt.Errorf("summarize: client count %d given twice", c)
		}
		cellIndex[c] = i
	}

	// byCell[i][variant] holds the runs of one cell in run order.
	byCell := make([]map[string][]Run, len(clients))
	for i := range byCell {
		byCell[i] = make(map[string][]Run, len(variants))
	}
	ordered := slices.Clone(runs)
	slices.SortStableFunc(ordered, func(a, b Run) int { return a.Seq - b.Seq })
	for _, r := range ordered {
		if !known[r.Variant] {
			return nil, nil, fmt.Errorf("summarize: run %d has unknown variant %q", r.Seq, r.Variant)
		}
		i, ok := cellIndex[r.Clients]
		if !ok {
			return nil, nil, fmt.Errorf("summarize: run %d has client count %d, not one of %v", r.Seq, r.Clients, clients)
		}
		if math.IsNaN(r.TPS) || math.IsInf(r.TPS, 0) || r.TPS < 0 {
			return nil, nil, fmt.Errorf("summarize: run %d has invalid tps %v", r.Seq, r.TPS)
		}
		byCell[i][r.Variant] = append(byCell[i][r.Variant], r)
	}

	var warnings []string
	warn := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !slices.Contains(warnings, msg) {
			warnings = append(warnings, msg)
		}
	}
	thresholds := &benchmath.Thresholds{CompareAlpha: alpha}
	perSample := math.Sqrt(Confidence)

	cells := make([]Cell, len(clients))
	for i, c := range clients {
		cell := Cell{Clients: c, Variants: make(map[string]VariantCell, len(variants)), Comparisons: []Comparison{}}
		summaries := make(map[string]benchmath.Summary, len(variants))
		samples := make(map[string]*benchmath.Sample, len(variants))
		for _, v := range variants {
			rs := byCell[i][v.Name]
			vc, sample, sum := summarizeVariant(rs, thresholds, perSample)
			cell.Variants[v.Name] = vc
			if len(rs) == 0 {
				warn("clients=%d: no runs for variant %s", c, v.Name)
				continue
			}
			samples[v.Name], summaries[v.Name] = sample, sum
			if vc.DriftingRuns > 0 {
				warn("clients=%d: %d of %d runs of variant %s drifted during the run", c, vc.DriftingRuns, len(rs), v.Name)
			}
			var failed int64
			for _, r := range rs {
				failed += r.FailedTransactions
			}
			if failed > 0 {
				warn("clients=%d: variant %s had %d failed transactions", c, v.Name, failed)
			}
		}
		base := variants[0].Name
		for _, v := range variants[1:] {
			if samples[base] == nil || samples[v.Name] == nil {
				continue
			}
			cmp := compare(base, v.Name, samples[base], samples[v.Name], summaries[base], summaries[v.Name], alpha)
			if cmp.Note != "" {
				warn("%s", cmp.Note)
			}
			cell.Comparisons = append(cell.Comparisons, cmp)
		}
		cells[i] = cell
	}
	return cells, warnings, nil
}

// summarizeVariant returns the statistics of one variant at one client
// count, and benchmath's sample and median summary for the comparisons.
func summarizeVariant(rs []Run, t *benchmath.Thresholds, confidence float64) (VariantCell, *benchmath.Sample, benchmath.Summary) {
	vc := VariantCell{TPS: make([]float64, 0, len(rs))}
	for _, r := range rs {
		vc.TPS = append(vc.TPS, r.TPS)
		if r.Drift {
			vc.DriftingRuns++
		}
	}
	if len(rs) == 0 {
		return vc, nil, benchmath.Summary{}
	}
	// NewSample sorts in place; TPS must stay in run order.
	sample := benchmath.NewSample(slices.Clone(vc.TPS), t)
	sum := benchmath.AssumeNothing.Summary(sample, confidence)
	ms := stats.Sample{Xs: sample.Values, Sorted: true}
	vc.MedianTPS = sum.Center
	vc.MinTPS, vc.MaxTPS = ms.Bounds()
	vc.IQRTPS = ms.IQR()
	if mean := ms.Mean(); len(rs) > 1 && mean != 0 {
		vc.CV = ms.StdDev() / mean
	}
	vc.LatencyMS = Latency{
		Avg:    medianOf(rs, func(l Latency) float64 { return l.Avg }),
		Stddev: medianOf(rs, func(l Latency) float64 { return l.Stddev }),
		P50:    medianOf(rs, func(l Latency) float64 { return l.P50 }),
		P95:    medianOf(rs, func(l Latency) float64 { return l.P95 }),
		P99:    medianOf(rs, func(l Latency) float64 { return l.P99 }),
	}
	return vc, sample, sum
}

// medianOf is the median of one latency field over the runs that have it:
// zero means the run had no value (no log), so it must not pull the median
// down.
func medianOf(rs []Run, field func(Latency) float64) float64 {
	var xs []float64
	for _, r := range rs {
		if v := field(r.LatencyMS); v != 0 && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

func compare(base, cand string, bs, cs *benchmath.Sample, bsum, csum benchmath.Summary, alpha float64) Comparison {
	res := benchmath.AssumeNothing.Compare(bs, cs)
	cmp := Comparison{Baseline: base, Candidate: cand, PValue: res.P, Verdict: VerdictNoDifference}
	if bsum.Center != 0 {
		cmp.DeltaPct = (csum.Center/bsum.Center - 1) * 100
		cmp.CILowPct, cmp.CIHighPct = ratioCI(bsum, csum)
	}
	if res.P <= alpha {
		switch {
		case csum.Center > bsum.Center:
			cmp.Verdict = VerdictFaster
		case csum.Center < bsum.Center:
			cmp.Verdict = VerdictSlower
		}
	}
	n1, n2 := len(bs.Values), len(cs.Values)
	if minP := smallestP(n1, n2, alpha); minP > alpha {
		cmp.Note = fmt.Sprintf("%d vs %d iterations cannot reach significance at alpha %g: even completely separated samples give p = %.3g; %s",
			n1, n2, alpha, minP, iterationsNeeded(alpha))
	}
	return cmp
}

// ratioCI is the interval of the candidate/baseline ratio, in percent,
// from the two median confidence intervals. When either side has no finite
// interval (too few samples) neither bound is given: one infinite bound
// would make its ratio 0 or infinite, a finite but wrong -100%.
func ratioCI(bsum, csum benchmath.Summary) (lo, hi *float64) {
	for _, b := range []float64{bsum.Lo, bsum.Hi, csum.Lo, csum.Hi} {
		if math.IsInf(b, 0) || math.IsNaN(b) {
			return nil, nil
		}
	}
	lo, hi = finitePct(csum.Lo/bsum.Hi), finitePct(csum.Hi/bsum.Lo)
	if lo == nil || hi == nil {
		return nil, nil
	}
	return lo, hi
}

// finitePct turns a ratio bound into a percentage, or nil when benchmath
// gave no finite bound (too few samples) or the ratio is undefined.
func finitePct(ratio float64) *float64 {
	if math.IsInf(ratio, 0) || math.IsNaN(ratio) {
		return nil
	}
	p := (ratio - 1) * 100
	return &p
}

// smallestP is the smallest p-value benchmath's U test can give for
// samples of sizes n1 and n2: the p of two completely separated samples.
func smallestP(n1, n2 int, alpha float64) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lo := make([]float64, n1)
	hi := make([]float64, n2)
	for i := range lo {
		lo[i] = float64(i)
	}
	for i := range hi {
		hi[i] = float64(n1 + i)
	}
	t := &benchmath.Thresholds{CompareAlpha: alpha}
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(lo, t), benchmath.NewSample(hi, t)).P
}

// iterationsNeeded says how many iterations per variant make significance
// at alpha possible at all.
func iterationsNeeded(alpha float64) string {
	for n := 2; n <= maxIterationsHint; n++ {
		if smallestP(n, n, alpha) <= alpha {
			return fmt.Sprintf("use at least %d iterations per variant", n)
		}
	}
	return fmt.Sprintf("use more than %d iterations per variant", maxIterationsHint)
}
