package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aclements/go-moremath/stats"
)

// Verdicts of a Comparison.
const (
	VerdictFaster       = "faster"
	VerdictSlower       = "slower"
	VerdictNoDifference = "no-difference"
)

// Analysis says how Summarize compares the variants.
type Analysis struct {
	// Alpha is the family-wise significance level of the verdicts.
	Alpha float64
	// Paired compares runs of the same client count and iteration as pairs,
	// which the alternating order makes them; false (a randomized order)
	// compares the samples unpaired.
	Paired bool
	// Correction is CorrectionHolm (the default when empty) or
	// CorrectionNone.
	Correction string
	// FirstStage, when positive, says the cells' lengths were chosen
	// adaptively from their first FirstStage pairs (TwoStageIterations):
	// the paired test then takes its spread from those pairs only.
	FirstStage int
	// Metric is the figure of merit compared (Run.Value): MetricTPS (the
	// default when empty) or MetricNOPM.
	Metric string
}

// AnalysisFor is the analysis a campaign's order calls for: paired for
// the alternating order, unpaired for a randomized one, Holm's correction
// in both.
func AnalysisFor(order string, alpha float64) Analysis {
	return Analysis{Alpha: alpha, Paired: order != "randomized", Correction: CorrectionHolm}
}

// Method is the comparison method the analysis uses.
func (an Analysis) Method() string {
	switch {
	case an.Paired && an.FirstStage > 0:
		return MethodPairedTTwoStage
	case an.Paired:
		return MethodPairedT
	}
	return MethodHodgesLehmann
}

// CorrectionName is the correction the analysis applies ("" means Holm).
func (an Analysis) CorrectionName() string {
	if an.Correction == "" {
		return CorrectionHolm
	}
	return an.Correction
}

// driftWarnPct is how much drift over a cell's span deserves a warning
// whatever the delta: past 1% the order of runs starts to matter.
const driftWarnPct = 1.0

// Summarize computes one Cell per client count from the runs of a campaign.
// The baseline is variants[0]; every other variant is a candidate compared
// with it. Runs may be a partial campaign (a resumed one still running): a
// variant without runs at a client count gets an empty VariantCell and no
// comparison, and a warning says so.
//
// Per variant: the median, min, max, IQR and CV of TPS (go-moremath, the
// library benchmath is built on; quartiles by Hyndman and Fan's R8).
//
// Per comparison, on log TPS so that a +5% and a -5% change are symmetric:
//
//   - Paired (the alternating order): the runs of baseline and candidate with
//     the same iteration form a pair, run back to back, so whatever drifts
//     slowly (the machine's load, caches, thermal state) cancels in the pair.
//     The estimate is the mean of ln(B_i/A_i), turned into a percentage; the
//     test is the paired t test and the interval the t interval around that
//     mean (gonum's Student's t). Log ratios of throughputs are close to
//     normal, the t test is exact for normal data and robust otherwise, and
//     unlike Wilcoxon's signed-rank test it gives a finite interval from 3
//     pairs rather than 6.
//   - Unpaired (a randomized order): the Hodges-Lehmann shift (the median of
//     all pairwise differences of log TPS), the exact two-sided Mann-Whitney
//     test (go-moremath's U distribution), and the distribution-free interval
//     whose ends are the order statistics of those differences at the test's
//     critical values. It needs 4 runs per side.
//
// In both, the interval and the test come from one distribution, so the
// interval excludes 0 exactly when the test rejects at the interval's level.
// The p-values of all comparisons of the campaign (every client count and
// candidate) are adjusted by Holm's method, the verdict is taken from the
// adjusted p, and the interval is given at the level at which its own test
// rejects exactly when the adjusted p is at most alpha (alpha/(m-k+1) for
// the k-th smallest of m p-values): verdict and interval never disagree.
// Verdicts: "faster" or "slower" when the adjusted p <= alpha, by the sign
// of the estimate; "no-difference" otherwise.
//
// The minimum detectable effect is the change the same test would detect
// with 80% probability at the same level, given the noise observed.
//
// Drift across runs: per cell, the slope of log TPS over the runs' start
// times with a level per variant, in percent per hour; a warning when the
// drift over the cell's span is large next to the cell's deltas.
func Summarize(variants []Variant, clients []int, runs []Run, an Analysis) ([]Cell, []string, error) {
	if err := checkAnalysis(variants, clients, an); err != nil {
		return nil, nil, fmt.Errorf("summarize: %w", err)
	}
	var w warnings
	byCell, err := groupRuns(variants, clients, runs, an.Metric, &w)
	if err != nil {
		return nil, nil, fmt.Errorf("summarize: %w", err)
	}
	cells, tests := describeCells(variants, clients, byCell, an, &w)
	judge(cells, tests, an, &w)
	compareCounters(cells, byCell, an)
	for i := range cells {
		warnDrift(&cells[i], byCell[i], w.add)
	}
	return cells, w.list, nil
}

// warnings collects messages once each, in the order first given.
type warnings struct{ list []string }

func (w *warnings) add(format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); !slices.Contains(w.list, msg) {
		w.list = append(w.list, msg)
	}
}

// checkAnalysis refuses an analysis Summarize cannot make: alpha outside
// (0, 1), an unknown correction, unnamed or repeated variants, client
// counts that are not positive or repeat.
func checkAnalysis(variants []Variant, clients []int, an Analysis) error {
	if len(variants) == 0 {
		return errors.New("no variants")
	}
	if !(an.Alpha > 0 && an.Alpha < 1) {
		return fmt.Errorf("alpha %v is not between 0 and 1", an.Alpha)
	}
	switch an.Correction {
	case "", CorrectionHolm, CorrectionNone:
	default:
		return fmt.Errorf("unknown correction %q (want %s or %s)", an.Correction, CorrectionHolm, CorrectionNone)
	}
	known := make(map[string]bool, len(variants))
	for _, v := range variants {
		if v.Name == "" {
			return errors.New("variant with an empty name")
		}
		if known[v.Name] {
			return fmt.Errorf("variant %q given twice", v.Name)
		}
		known[v.Name] = true
	}
	seen := make(map[int]bool, len(clients))
	for _, c := range clients {
		if c <= 0 {
			return fmt.Errorf("client count %d is not positive", c)
		}
		if seen[c] {
			return fmt.Errorf("client count %d given twice", c)
		}
		seen[c] = true
	}
	return nil
}

// groupRuns sorts the runs into their cells: byCell[i][variant] holds the
// runs of clients[i] in run order. A run of an unknown variant or client
// count is an error; a run without a positive figure of merit (a failed
// run a journal kept) is left out with a warning, so one bad run does not
// lose the others.
func groupRuns(variants []Variant, clients []int, runs []Run, metric string, w *warnings) ([]map[string][]Run, error) {
	cellIndex := make(map[int]int, len(clients))
	for i, c := range clients {
		cellIndex[c] = i
	}
	byCell := make([]map[string][]Run, len(clients))
	for i := range byCell {
		byCell[i] = make(map[string][]Run, len(variants))
	}
	ordered := slices.Clone(runs)
	slices.SortStableFunc(ordered, func(a, b Run) int { return a.Seq - b.Seq })
	for _, r := range ordered {
		if !slices.ContainsFunc(variants, func(v Variant) bool { return v.Name == r.Variant }) {
			return nil, fmt.Errorf("run %d has unknown variant %q", r.Seq, r.Variant)
		}
		i, ok := cellIndex[r.Clients]
		if !ok {
			return nil, fmt.Errorf("run %d has client count %d, not one of %v", r.Seq, r.Clients, clients)
		}
		if v := r.Value(metric); !validValue(v) {
			w.add("clients=%d: run %d (%s, iteration %d) has invalid %s %v and is left out of the statistics", r.Clients, r.Seq, r.Variant, r.Iteration, strings.ToLower(MetricLabel(metric)), v)
			continue
		}
		byCell[i][r.Variant] = append(byCell[i][r.Variant], r)
	}
	return byCell, nil
}

// validValue says a figure of merit can enter the statistics: a positive
// finite number.
func validValue(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 }

// pendingTest is one comparison's inference, waiting for the correction
// across all comparisons: cells[cell].Comparisons[idx].
type pendingTest struct {
	cell, idx int
	inf       inference
}

// describeCells gives each cell its variants' statistics, its drift and
// its comparisons' inferences, and warns about what a reader must know of
// the runs (missing, drifting, failed transactions, client-bound).
func describeCells(variants []Variant, clients []int, byCell []map[string][]Run, an Analysis, w *warnings) ([]Cell, []pendingTest) {
	var tests []pendingTest
	cells := make([]Cell, len(clients))
	for i, c := range clients {
		cell := Cell{Clients: c, Variants: make(map[string]VariantCell, len(variants)), Comparisons: []Comparison{}}
		var perVariant [][]Run
		for _, v := range variants {
			rs := byCell[i][v.Name]
			cell.Variants[v.Name] = summarizeVariant(rs, an.Metric)
			if len(rs) == 0 {
				w.add("clients=%d: no runs for variant %s", c, v.Name)
				continue
			}
			perVariant = append(perVariant, rs)
			warnRuns(c, v.Name, rs, cell.Variants[v.Name], w)
		}
		if slope, ok := trend(perVariant, an.Metric); ok {
			cell.DriftPctPerHour = &slope
		}
		base := variants[0].Name
		for _, v := range variants[1:] {
			br, cr := byCell[i][base], byCell[i][v.Name]
			if len(br) == 0 || len(cr) == 0 {
				continue
			}
			var inf inference
			if an.Paired {
				a, b := pairs(br, cr, an.Metric)
				inf = pairedLogT(a, b, an.FirstStage)
			} else {
				inf = hodgesLehmann(valuesOf(br, an.Metric), valuesOf(cr, an.Metric))
			}
			cell.Comparisons = append(cell.Comparisons, Comparison{Baseline: base, Candidate: v.Name})
			tests = append(tests, pendingTest{cell: i, idx: len(cell.Comparisons) - 1, inf: inf})
		}
		cells[i] = cell
	}
	return cells, tests
}

// warnRuns warns about one variant's runs of a cell: drift within runs,
// failed transactions, a saturated client.
func warnRuns(clients int, variant string, rs []Run, vc VariantCell, w *warnings) {
	if vc.DriftingRuns > 0 {
		w.add("clients=%d: %d of %d runs of variant %s drifted during the run", clients, vc.DriftingRuns, len(rs), variant)
	}
	var failed int64
	for _, r := range rs {
		failed += r.FailedTransactions
	}
	if failed > 0 {
		w.add("clients=%d: variant %s had %d failed transactions", clients, variant, failed)
	}
	if vc.ClientBoundRuns > 0 {
		w.add("clients=%d: %d of %d runs of variant %s were client-bound (pgbench used at least %.0f%% of the CPU it may use): the numbers may measure the client, not the server",
			clients, vc.ClientBoundRuns, len(rs), variant, ClientBoundShare*100)
	}
}

// judge corrects the p-values of every comparison that has a test across
// the campaign, then fills each comparison at its corrected level: its
// interval, MDE and verdict, or why it has none.
func judge(cells []Cell, tests []pendingTest, an Analysis, w *warnings) {
	// Only comparisons that have a test count in the family.
	var ps, floors []float64
	for _, p := range tests {
		if p.inf.ok {
			ps = append(ps, p.inf.p)
			floors = append(floors, p.inf.floor)
		}
	}
	holmCorrected := an.Correction != CorrectionNone
	adjusted := slices.Clone(ps)
	if holmCorrected {
		adjusted = holm(ps)
	}
	k := 0
	for _, p := range tests {
		cmp := &cells[p.cell].Comparisons[p.idx]
		adj, g, floorAdj := p.inf.p, an.Alpha, 0.0
		if p.inf.ok {
			adj = adjusted[k]
			g = levelFor(an.Alpha, p.inf.p, adj, len(ps))
			floorAdj = minAdjusted(floors, k, holmCorrected)
			k++
		}
		fillComparison(cmp, p.inf, adj, an.Alpha, g, floorAdj, FewestRunsPerSide(len(ps), an.Alpha, holmCorrected))
		if cmp.Note != "" {
			w.add("clients=%d: %s vs %s: %s", cells[p.cell].Clients, cmp.Candidate, cmp.Baseline, cmp.Note)
		}
	}
}

// warnDrift warns when the drift of a cell over its span is large next to
// its deltas: then the run order, not the variants, may explain them.
func warnDrift(cell *Cell, runs map[string][]Run, warn func(string, ...any)) {
	if cell.DriftPctPerHour == nil {
		return
	}
	var first, last time.Time
	for _, rs := range runs {
		for _, r := range rs {
			if first.IsZero() || r.StartedAt.Before(first) {
				first = r.StartedAt
			}
			if end := r.StartedAt.Add(time.Duration(r.Seconds * float64(time.Second))); end.After(last) {
				last = end
			}
		}
	}
	drift := math.Abs(*cell.DriftPctPerHour) * last.Sub(first).Hours()
	largest := 0.0
	for _, cmp := range cell.Comparisons {
		largest = max(largest, math.Abs(cmp.DeltaPct))
	}
	if drift >= driftWarnPct || (largest > 0 && drift >= largest/2) {
		warn("clients=%d: throughput drifted %+.2f%%/hour across the runs (%.2f%% over the cell), large next to the measured delta of %.2f%%",
			cell.Clients, *cell.DriftPctPerHour, drift, largest)
	}
}

// pairs matches baseline and candidate runs by iteration and gives their
// values under metric; a run without its partner (a campaign still
// running) is left out.
func pairs(base, cand []Run, metric string) (a, b []float64) {
	byIter := make(map[int]float64, len(base))
	for _, r := range base {
		byIter[r.Iteration] = r.Value(metric)
	}
	// In iteration order: an adaptive cell's first stage is its first pairs.
	cs := slices.Clone(cand)
	slices.SortStableFunc(cs, func(x, y Run) int { return x.Iteration - y.Iteration })
	for _, r := range cs {
		if v, ok := byIter[r.Iteration]; ok {
			a = append(a, v)
			b = append(b, r.Value(metric))
		}
	}
	return a, b
}

// valuesOf is each run's value under metric, in order.
func valuesOf(rs []Run, metric string) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Value(metric)
	}
	return out
}

// MetricLabel names a figure of merit as reports print it: "TPS" or "NOPM".
func MetricLabel(metric string) string {
	if metric == MetricNOPM {
		return "NOPM"
	}
	return "TPS"
}

// summarizeVariant returns the statistics of one variant at one client
// count; CV is of the figure of merit.
func summarizeVariant(rs []Run, metric string) VariantCell {
	vc := VariantCell{TPS: valuesOf(rs, MetricTPS), ClientBoundRuns: clientBoundRuns(rs)}
	vc.Counters, vc.CountersCompared = counterMedians(rs)
	for _, r := range rs {
		if r.Drift {
			vc.DriftingRuns++
		}
	}
	if len(rs) == 0 {
		return vc
	}
	ms := stats.Sample{Xs: slices.Sorted(slices.Values(vc.TPS)), Sorted: true}
	vc.MedianTPS = ms.Quantile(0.5)
	vc.MinTPS, vc.MaxTPS = ms.Bounds()
	vc.IQRTPS = ms.IQR()
	if metric == MetricNOPM {
		vc.NOPM = valuesOf(rs, MetricNOPM)
		ms = stats.Sample{Xs: slices.Sorted(slices.Values(vc.NOPM)), Sorted: true}
		vc.MedianNOPM = ms.Quantile(0.5)
		vc.MinNOPM, vc.MaxNOPM = ms.Bounds()
		vc.IQRNOPM = ms.IQR()
		tpm := make([]float64, len(rs))
		for i, r := range rs {
			tpm[i] = r.TPM
		}
		vc.MedianTPM = stats.Sample{Xs: tpm}.Quantile(0.5)
		vc.TypeLatencyMS = typeLatencies(rs)
	}
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
	return vc
}

// typeLatencies is the median of each TPC-C transaction type's latencies
// over the runs.
func typeLatencies(rs []Run) map[string]Latency {
	out := map[string]Latency{}
	for _, r := range rs {
		for name := range r.Types {
			if _, done := out[name]; done {
				continue
			}
			var typed []Run
			for _, r := range rs {
				if t, ok := r.Types[name]; ok {
					typed = append(typed, Run{LatencyMS: t.LatencyMS})
				}
			}
			out[name] = Latency{
				Avg: medianOf(typed, func(l Latency) float64 { return l.Avg }),
				P50: medianOf(typed, func(l Latency) float64 { return l.P50 }),
				P95: medianOf(typed, func(l Latency) float64 { return l.P95 }),
				P99: medianOf(typed, func(l Latency) float64 { return l.P99 }),
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
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
