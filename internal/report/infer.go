package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Methods of a Comparison.
const (
	// MethodPairedT is a paired t test on the log ratios ln(B_i/A_i) of the
	// runs that the alternating order pairs: the same client count and
	// iteration, run one after the other.
	MethodPairedT = "paired-t-log-ratio"
	// MethodPairedTTwoStage is MethodPairedT for a cell whose number of
	// iterations was chosen adaptively (Stein's two-stage t).
	MethodPairedTTwoStage = "paired-t-log-ratio-two-stage"
	// MethodHodgesLehmann is the Hodges-Lehmann shift of log TPS with the
	// exact Mann-Whitney interval and test, for a randomized order, whose
	// runs are not paired.
	MethodHodgesLehmann = "hodges-lehmann-mann-whitney"
)

// Corrections across the comparisons of a campaign.
const (
	CorrectionHolm = "holm"
	CorrectionNone = "none"
)

// The fewest runs with which a method gives a test and an interval:
// 3 pairs (2 degrees of freedom), or 4 runs per side (the smallest exact
// Mann-Whitney test that can reach p < 0.05).
const (
	MinPairs   = 3
	MinPerSide = 4
)

// exactUMax bounds the sample sizes for which the Mann-Whitney distribution
// is computed exactly; past it the normal approximation is as good and the
// exact recursion (quartic in n) too slow.
const exactUMax = 50

// power is the power at which the minimum detectable effect is given.
const power = 0.8

// inference is one method applied to one comparison, on the log scale.
// Its interval and its test come from the same distribution, so that the
// interval at level 1-g excludes 0 exactly when p <= g.
type inference struct {
	method string
	n1, n2 int     // pairs: both the number of pairs
	shift  float64 // estimate of ln(B/A)
	p      float64 // two-sided p of "no shift"
	ok     bool    // enough runs for a test and an interval
	// interval returns the 1-g interval of the shift; ok is false when no
	// finite interval exists at that level.
	interval func(g float64) (lo, hi float64, ok bool)
	// mde is the shift a test at level g detects with probability power,
	// given the noise observed; NaN when it cannot be estimated.
	mde func(g float64) float64
}

// pairedLogT is the paired t analysis of ln(b_i/a_i), the pairs in
// iteration order. With firstStage > 0 (an adaptive cell, whose length was
// chosen from its first firstStage pairs) it is Stein's two-stage t: the
// spread comes from the first stage only and the degrees of freedom are
// firstStage-1, which keeps the test and the interval exact although the
// number of pairs depends on the data.
func pairedLogT(a, b []float64, firstStage int) inference {
	n := min(len(a), len(b))
	inf := inference{method: MethodPairedT, n1: n, n2: n, p: 1}
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Log(b[i] / a[i])
	}
	if n > 0 {
		inf.shift = stat.Mean(d, nil)
	}
	if n < MinPairs {
		return inf
	}
	inf.ok = true
	stage := d
	if firstStage > 0 {
		if n < firstStage {
			// A cell cut short before its first stage completed (a
			// campaign still running): no two-stage statistic yet.
			inf.ok = false
			return inf
		}
		inf.method = MethodPairedTTwoStage
		stage = d[:firstStage]
	}
	sd := stat.StdDev(stage, nil)
	se := sd / math.Sqrt(float64(n))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(stage) - 1)}
	switch {
	case se > 0:
		inf.p = 2 * t.Survival(math.Abs(inf.shift)/se)
	case inf.shift != 0:
		inf.p = 0 // every pair moved by exactly the same ratio
	}
	inf.interval = func(g float64) (float64, float64, bool) {
		q := t.Quantile(1 - g/2)
		return inf.shift - q*se, inf.shift + q*se, true
	}
	inf.mde = func(g float64) float64 {
		return (t.Quantile(1-g/2) + t.Quantile(power)) * se
	}
	return inf
}

// hodgesLehmann is the unpaired analysis of ln b - ln a: the median of all
// pairwise differences, and the exact Mann-Whitney test and interval (the
// interval's ends are order statistics of those differences at the test's
// critical values, which is what makes the two agree).
func hodgesLehmann(a, b []float64) inference {
	n1, n2 := len(a), len(b)
	inf := inference{method: MethodHodgesLehmann, n1: n1, n2: n2, p: 1}
	if n1 == 0 || n2 == 0 {
		return inf
	}
	la, lb := logs(a), logs(b)
	diffs := make([]float64, 0, n1*n2)
	u := 0.0 // Mann-Whitney U of b over a: pairs with b above a, ties half
	for _, x := range la {
		for _, y := range lb {
			diffs = append(diffs, y-x)
			switch {
			case y > x:
				u++
			case y == x:
				u += 0.5
			}
		}
	}
	slices.Sort(diffs)
	inf.shift = stats.Sample{Xs: diffs, Sorted: true}.Quantile(0.5)
	if n1 < MinPerSide || n2 < MinPerSide {
		return inf
	}
	inf.ok = true
	cdf := uCDF(n1, n2)
	nn := float64(n1 * n2)
	inf.p = min(1, 2*cdf(math.Floor(min(u, nn-u))))
	inf.interval = func(g float64) (float64, float64, bool) {
		// c is the largest count with 2 P(U <= c) <= g; the interval drops
		// c differences from each end.
		c := -1
		for c+1 < n1*n2/2+1 && 2*cdf(float64(c+1)) <= g {
			c++
		}
		if c < 0 {
			return math.Inf(-1), math.Inf(1), false
		}
		return diffs[c], diffs[len(diffs)-1-c], true
	}
	// Pooled spread of the log values, and the test's efficiency relative
	// to the t test (3/pi under normality).
	v1, v2 := stat.Variance(la, nil), stat.Variance(lb, nil)
	pooled := math.Sqrt(((float64(n1)-1)*v1 + (float64(n2)-1)*v2) / float64(n1+n2-2))
	se := pooled * math.Sqrt(1/float64(n1)+1/float64(n2)) / math.Sqrt(3/math.Pi)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n1 + n2 - 2)}
	inf.mde = func(g float64) float64 {
		return (t.Quantile(1-g/2) + t.Quantile(power)) * se
	}
	return inf
}

// uCDF is P(U <= u) under "no shift" for samples of n1 and n2: exact for
// small samples, normal with continuity correction past exactUMax.
func uCDF(n1, n2 int) func(u float64) float64 {
	if n1 <= exactUMax && n2 <= exactUMax {
		d := stats.UDist{N1: n1, N2: n2}
		return d.CDF
	}
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2*(n1+n2+1)) / 12)
	norm := distuv.Normal{Mu: mean, Sigma: sd}
	return func(u float64) float64 { return norm.CDF(u + 0.5) }
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// holm adjusts p-values for the comparisons of one campaign (Holm's
// step-down method): the k-th smallest of m is multiplied by m-k+1, then
// made monotone. It controls the family-wise error rate at any dependence
// between the comparisons.
func holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case ps[i] < ps[j]:
			return -1
		case ps[i] > ps[j]:
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 0.0
	for k, i := range idx {
		running = max(running, min(1, float64(m-k)*ps[i]))
		adj[i] = running
	}
	return adj
}

// levelFor is the level g at which a comparison's interval is given: the
// one at which its own test rejects exactly when the adjusted p is at most
// alpha. Without correction it is alpha; under Holm it is alpha/(m-k+1) for
// the k-th smallest p, smaller where the step-down's monotonicity binds.
func levelFor(alpha, p, adjusted float64, m int) float64 {
	if adjusted <= 0 || p <= 0 {
		return alpha / float64(max(m, 1))
	}
	return alpha * p / adjusted
}

// fillComparison sets the estimate, interval, p-values, minimum detectable
// effect and verdict of cmp from its inference, at the level g.
func fillComparison(cmp *Comparison, inf inference, adjusted, alpha, g float64) {
	cmp.Method = inf.method
	cmp.NBaseline, cmp.NCandidate = inf.n1, inf.n2
	cmp.DeltaPct = logPct(inf.shift)
	cmp.PValue = inf.p
	cmp.PAdjusted = adjusted
	cmp.CILevel = 1 - g
	cmp.Verdict = VerdictNoDifference
	if !inf.ok {
		if inf.method == MethodPairedT {
			cmp.Note = fmt.Sprintf("%d paired iterations give no test or interval: a paired comparison needs at least %d iterations per variant", inf.n1, MinPairs)
		} else {
			cmp.Note = fmt.Sprintf("%d vs %d iterations give no test or interval: an unpaired comparison needs at least %d iterations per variant", inf.n1, inf.n2, MinPerSide)
		}
		return
	}
	if lo, hi, ok := inf.interval(g); ok {
		l, h := logPct(lo), logPct(hi)
		cmp.CILowPct, cmp.CIHighPct = &l, &h
	}
	if m := inf.mde(g); !math.IsNaN(m) && !math.IsInf(m, 0) {
		v := logPct(m)
		cmp.MDEPct = &v
	}
	if adjusted <= alpha {
		switch {
		case inf.shift > 0:
			cmp.Verdict = VerdictFaster
		case inf.shift < 0:
			cmp.Verdict = VerdictSlower
		default:
			// A zero estimate cannot be significant unless the test and
			// the estimate disagree; say so rather than hide it.
			cmp.Note = fmt.Sprintf("p = %.3g but the estimated shift is 0: no direction to report", adjusted)
		}
	}
}

// logPct turns a log ratio into a percentage change.
func logPct(logRatio float64) float64 { return math.Expm1(logRatio) * 100 }

// trend is the drift of the log of the figure of merit (metric) over run
// order within a cell, with a term per variant so that the A/B difference
// is not mistaken for drift: the slope of the within-variant deviations of
// its log against the
// within-variant deviations of start time. It returns the slope in percent
// (log points) per hour and false when the cell has too few runs or no time spread.
func trend(byVariant [][]Run, metric string) (pctPerHour float64, ok bool) {
	var xs, ys []float64
	for _, rs := range byVariant {
		if len(rs) < 2 {
			continue
		}
		t0 := rs[0].StartedAt
		var tx, ly []float64
		for _, r := range rs {
			v := r.Value(metric)
			if v <= 0 {
				continue
			}
			tx = append(tx, r.StartedAt.Sub(t0).Hours())
			ly = append(ly, math.Log(v))
		}
		mx, my := stat.Mean(tx, nil), stat.Mean(ly, nil)
		for i := range tx {
			xs = append(xs, tx[i]-mx)
			ys = append(ys, ly[i]-my)
		}
	}
	if len(xs) < 4 || stat.Variance(xs, nil) == 0 {
		return 0, false
	}
	_, slope := stat.LinearRegression(xs, ys, nil, true)
	// Percent (log points) per hour, not expm1 of the hourly slope: a cell
	// lasts minutes, and compounding its slope over an hour would report
	// absurd figures for an ordinary wobble.
	return slope * 100, true
}

// TwoStageIterations is the number of pairs an adaptive cell runs, decided
// from its first stage (the pairs a, b run so far, at least MinPairs): the
// fewest with which the two-stage interval of the log ratio at level
// 1-alpha has a half-width of at most ln(1+targetPct/100) (for small
// changes, targetPct percentage points), never fewer than len(a) and
// never more than maxN. It uses only the first stage, which is what keeps
// the final interval exact.
func TwoStageIterations(a, b []float64, targetPct, alpha float64, maxN int) int {
	n0 := min(len(a), len(b))
	if n0 < MinPairs {
		return maxN
	}
	d := make([]float64, n0)
	for i := range d {
		d[i] = math.Log(b[i] / a[i])
	}
	sd := stat.StdDev(d, nil)
	h := math.Log1p(targetPct / 100)
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n0 - 1)}.Quantile(1 - alpha/2)
	need := int(math.Ceil(math.Pow(q*sd/h, 2)))
	return min(maxN, max(n0, need))
}
