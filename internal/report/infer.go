package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/aclements/go-moremath/mathx"
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
	ok     bool    // enough runs with spread for a test and an interval
	// why says what kept a test from being made, when ok is false.
	why string
	// floor is the smallest two-sided p the design can give whatever the
	// data: 0 for the t tests, 2/C(n1+n2, n1) for the exact Mann-Whitney.
	floor float64
	// interval returns the 1-g interval of the shift; ok is false when no
	// finite interval exists at that level.
	interval func(g float64) (lo, hi float64, ok bool)
	// mde is the shift a test at level g detects with probability power,
	// given the noise observed; NaN when it cannot be estimated.
	mde func(g float64) float64
}

// noSpreadWhy is the note of a comparison whose samples do not vary.
const (
	noSpreadPrefix = "the runs have no spread"
	noSpreadWhy    = noSpreadPrefix + " (every %s the same): p and interval are not computable, and no verdict is drawn from them; " +
		"identical results usually mean a resolution or input problem (a rounded figure, one run copied), not a perfectly quiet machine"
)

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
	stage := d
	if firstStage > 0 {
		inf.method = MethodPairedTTwoStage
		stage = d[:min(n, firstStage)]
	}
	switch {
	case n < MinPairs:
		inf.why = fmt.Sprintf("%d paired iterations give no test or interval: a paired comparison needs at least %d iterations per variant", n, MinPairs)
		return inf
	case firstStage > 0 && n < firstStage:
		// A cell cut short before its first stage completed (a campaign
		// still running): the two-stage statistic takes its spread from
		// the whole first stage.
		inf.why = fmt.Sprintf("%d of the first stage's %d paired iterations ran: the two-stage test and interval wait for the whole first stage", n, firstStage)
		return inf
	}
	sd := stat.StdDev(stage, nil)
	if !(sd > 0) {
		inf.why = fmt.Sprintf(noSpreadWhy, "pair's ratio is")
		return inf
	}
	inf.ok = true
	se := sd / math.Sqrt(float64(n))
	nu := float64(len(stage) - 1)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	inf.p = 2 * t.Survival(math.Abs(inf.shift)/se)
	inf.interval = func(g float64) (float64, float64, bool) {
		q := t.Quantile(1 - g/2)
		return inf.shift - q*se, inf.shift + q*se, true
	}
	inf.mde = func(g float64) float64 { return tMDE(g, nu, se/c4(nu)) }
	return inf
}

// hodgesLehmann is the unpaired analysis of ln b - ln a: the median of all
// pairwise differences, and the exact Mann-Whitney test and interval. The
// test's distribution is the permutation distribution of U conditional on
// the ties of the samples (go-moremath's UDist with its tie vector), and
// the interval is the set of shifts the same test does not reject, so that
// the two agree with ties too.
func hodgesLehmann(a, b []float64) inference {
	n1, n2 := len(a), len(b)
	inf := inference{method: MethodHodgesLehmann, n1: n1, n2: n2, p: 1}
	if n1 == 0 || n2 == 0 {
		return inf
	}
	mw := newMannWhitney(logs(a), logs(b))
	inf.shift = stats.Sample{Xs: mw.diffs, Sorted: true}.Quantile(0.5)
	inf.floor = mwFloor(n1, n2)
	v1, v2 := stat.Variance(mw.la, nil), stat.Variance(mw.lb, nil)
	switch {
	case n1 < MinPerSide || n2 < MinPerSide:
		inf.why = fmt.Sprintf("%d vs %d iterations give no test or interval: an unpaired comparison needs at least %d iterations per variant", n1, n2, MinPerSide)
		return inf
	case !(v1 > 0 || v2 > 0):
		inf.why = fmt.Sprintf(noSpreadWhy, "run of each variant gave")
		return inf
	}
	inf.ok = true
	inf.p = mw.pAt(0)
	inf.interval = mw.interval
	// Pooled spread of the log values, and the test's efficiency relative
	// to the t test (3/pi under normality).
	nu := float64(n1 + n2 - 2)
	pooled := math.Sqrt(((float64(n1)-1)*v1 + (float64(n2)-1)*v2) / nu)
	se := pooled * math.Sqrt(1/float64(n1)+1/float64(n2)) / math.Sqrt(3/math.Pi)
	inf.mde = func(g float64) float64 { return tMDE(g, nu, se/c4(nu)) }
	return inf
}

// welchLogT is Welch's t test of ln b - ln a for unpaired samples of
// unequal spread, with the Welch-Satterthwaite degrees of freedom: the
// test "what differed" applies to a counter when the runs are not paired.
func welchLogT(a, b []float64) inference {
	n1, n2 := len(a), len(b)
	inf := inference{method: "welch-t-log", n1: n1, n2: n2, p: 1}
	if n1 < MinPairs || n2 < MinPairs {
		return inf
	}
	la, lb := logs(a), logs(b)
	inf.shift = stat.Mean(lb, nil) - stat.Mean(la, nil)
	w1, w2 := stat.Variance(la, nil)/float64(n1), stat.Variance(lb, nil)/float64(n2)
	se := math.Sqrt(w1 + w2)
	if !(se > 0) {
		return inf
	}
	inf.ok = true
	nu := (w1 + w2) * (w1 + w2) / (w1*w1/float64(n1-1) + w2*w2/float64(n2-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	inf.p = 2 * t.Survival(math.Abs(inf.shift)/se)
	inf.interval = func(g float64) (float64, float64, bool) {
		q := t.Quantile(1 - g/2)
		return inf.shift - q*se, inf.shift + q*se, true
	}
	inf.mde = func(float64) float64 { return math.NaN() }
	return inf
}

// mwFloor is the smallest two-sided p of the exact Mann-Whitney test with
// n1 and n2 runs and no ties: both samples entirely apart, 2/C(n1+n2, n1).
func mwFloor(n1, n2 int) float64 {
	if n1 > exactUMax || n2 > exactUMax {
		return 0
	}
	return min(1, 2/mathx.Choose(n1+n2, n1))
}

// tMDE is the shift a two-sided t test at level g with nu degrees of
// freedom detects with probability power when the standard error of the
// estimate is se: the noncentrality at which the noncentral t's two-sided
// power is power, times se. The power comes from noncentralTPower, whose
// accuracy TestNoncentralTPower checks by simulation.
func tMDE(g, nu, se float64) float64 {
	if !(se > 0) || nu < 1 {
		return math.NaN()
	}
	return mdeNoncentrality(g, nu) * se
}

// mdeCache keeps the noncentralities tMDE solves for, by level and degrees
// of freedom: a campaign asks for the same few again and again.
var mdeCache sync.Map // [2]float64{g, nu} -> float64

// mdeNoncentrality solves noncentralTPower(ncp, q, nu) = power for ncp
// (the power grows with ncp) by the Illinois variant of regula falsi,
// which keeps a bracket and converges in a few steps. The bracket starts
// a unit either side of the normal approximation q + z_power, which the
// root lies within unless nu is small (the t's heavier tail moves it up);
// it widens by doubling steps until it holds the root. The cache misses
// for every new level, and Holm's levels (levelFor) vary with the
// p-values, so most comparisons solve anew.
func mdeNoncentrality(g, nu float64) float64 {
	key := [2]float64{g, nu}
	if v, ok := mdeCache.Load(key); ok {
		return v.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(1 - g/2)
	s := chiScale(nu)
	f := func(ncp float64) float64 { return noncentralTPower(ncp, q, s) - power }
	lo, hi, flo, fhi := mdeBracket(f, q+distuv.UnitNormal.Quantile(power))
	x := illinois(f, lo, hi, flo, fhi)
	mdeCache.Store(key, x)
	return x
}

// mdeBracket is an interval [lo, hi] of ncp >= 0 around guess whose ends
// f puts on either side of 0 (f grows with ncp and is negative at 0), and
// f at its ends.
func mdeBracket(f func(float64) float64, guess float64) (lo, hi, flo, fhi float64) {
	lo, hi = max(0, guess-1), guess+1
	flo, fhi = f(lo), f(hi)
	for step := 1.0; flo > 0; step *= 2 {
		hi, fhi = lo, flo
		lo = max(0, lo-step)
		flo = f(lo)
	}
	for step := 1.0; fhi < 0; step *= 2 {
		lo, flo = hi, fhi
		hi += step
		fhi = f(hi)
	}
	return lo, hi, flo, fhi
}

// illinois finds the root of the increasing f within [lo, hi], where f is
// flo and fhi, on either side of 0: to |f| < 1e-10 or a relative width of
// 1e-9.
func illinois(f func(float64) float64, lo, hi, flo, fhi float64) float64 {
	side := 0
	x := hi
	for range 100 {
		x = (lo*fhi - hi*flo) / (fhi - flo)
		fx := f(x)
		if math.Abs(fx) < 1e-10 || hi-lo < 1e-9*hi {
			break
		}
		if (fx < 0) == (flo < 0) {
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return x
}

// powerStrata is how many equally likely strata of the chi-square the
// power integral uses.
const powerStrata = 512

// chiScale is sqrt(V/nu) at the midpoint quantile of each of powerStrata
// equally likely strata of V ~ chi-square(nu) (gonum's distribution).
func chiScale(nu float64) []float64 {
	if v, ok := chiScaleCache.Load(nu); ok {
		return v.([]float64)
	}
	chi := distuv.ChiSquared{K: nu}
	s := make([]float64, powerStrata)
	for i := range s {
		s[i] = math.Sqrt(chi.Quantile((float64(i)+0.5)/powerStrata) / nu)
	}
	chiScaleCache.Store(nu, s)
	return s
}

// chiScaleCache keeps chiScale's strata by degrees of freedom.
var chiScaleCache sync.Map // float64 -> []float64

// noncentralTPower is P(|T| > q) for T noncentral t with noncentrality
// ncp and the degrees of freedom behind s (chiScale): T = (Z + ncp) /
// sqrt(V/nu) with Z standard normal and V chi-square(nu), so the power is
// E_V[Phi(ncp - q s) + Phi(-ncp - q s)] with s = sqrt(V/nu), integrated over
// V's quantiles by the midpoint rule. The integrand is bounded and smooth
// in the quantile, so 512 strata give the power to about 1e-4, far finer
// than the simulation that checks it.
func noncentralTPower(ncp, q float64, s []float64) float64 {
	norm := distuv.UnitNormal
	sum := 0.0
	for _, si := range s {
		sum += norm.CDF(ncp-q*si) + norm.CDF(-ncp-q*si)
	}
	return sum / float64(len(s))
}

// c4 is E[s]/sigma for the standard deviation s of normal samples with nu
// degrees of freedom. Dividing an observed s by it gives an unbiased
// estimate of sigma, so that the reported MDE has its power on average
// rather than less (s underestimates sigma by 11% at 2 degrees of freedom).
func c4(nu float64) float64 {
	lg1, _ := math.Lgamma((nu + 1) / 2)
	lg2, _ := math.Lgamma(nu / 2)
	return math.Sqrt(2/nu) * math.Exp(lg1-lg2)
}

// mannWhitney holds two samples of log values and their pairwise
// differences, for the test of a shift and its inversion.
type mannWhitney struct {
	la, lb []float64 // sorted
	diffs  []float64 // lb_j - la_i, sorted
	// ties says some values tie within a sample, or across the samples at
	// a shift of 0: then the test's distribution is the one conditional on
	// the ties, and the interval is found by inverting that test.
	ties bool
}

func newMannWhitney(la, lb []float64) *mannWhitney {
	mw := &mannWhitney{la: slices.Sorted(slices.Values(la)), lb: slices.Sorted(slices.Values(lb))}
	mw.diffs = make([]float64, 0, len(la)*len(lb))
	for _, x := range mw.la {
		for _, y := range mw.lb {
			d := y - x
			mw.diffs = append(mw.diffs, d)
			mw.ties = mw.ties || d == 0
		}
	}
	slices.Sort(mw.diffs)
	for _, s := range [][]float64{mw.la, mw.lb} {
		for i := 1; i < len(s); i++ {
			mw.ties = mw.ties || s[i] == s[i-1]
		}
	}
	return mw
}

// uAt is Mann-Whitney's U of b - delta over a (pairs with b_j - delta above
// a_i, ties counted half) and the tie vector of the merged samples: the
// size of each group of equal values in ascending order. Whether b_j -
// delta ties a_i is decided on the difference b_j - a_i itself, so a delta
// taken from the differences ties exactly.
func (mw *mannWhitney) uAt(delta float64) (u float64, t []int) {
	type item struct {
		v   float64
		idx int
		b   bool
	}
	// cmpAB orders a_i against b_j - delta.
	cmpAB := func(i, j int) int { return cmp.Compare(delta, mw.lb[j]-mw.la[i]) }
	items := make([]item, 0, len(mw.la)+len(mw.lb))
	for i, x := range mw.la {
		items = append(items, item{x, i, false})
	}
	for j, y := range mw.lb {
		items = append(items, item{y, j, true})
	}
	order := func(x, y item) int {
		switch {
		case x.b == y.b:
			return cmp.Compare(x.v, y.v)
		case !x.b:
			return cmpAB(x.idx, y.idx)
		}
		return -cmpAB(y.idx, x.idx)
	}
	slices.SortFunc(items, order)
	for k := 0; k < len(items); {
		e := k + 1
		for e < len(items) && order(items[k], items[e]) == 0 {
			e++
		}
		t = append(t, e-k)
		k = e
	}
	for i := range mw.la {
		for j := range mw.lb {
			switch cmpAB(i, j) {
			case -1:
				u++
			case 0:
				u += 0.5
			}
		}
	}
	return u, t
}

// pAt is the two-sided p of "the shift is delta": twice the smaller tail
// of U's permutation distribution given the ties, at most 1. Past the
// exact limits it is the normal approximation with the tie correction.
func (mw *mannWhitney) pAt(delta float64) float64 {
	n1, n2 := len(mw.la), len(mw.lb)
	u, t := mw.uAt(delta)
	if len(t) == 1 {
		return 1 // every value equal: nothing to test
	}
	hasTies := len(t) < n1+n2
	limit := exactUMax
	if hasTies {
		limit = stats.MannWhitneyTiesExactLimit
	}
	if n1 > limit || n2 > limit {
		return mwNormalP(u, n1, n2, t)
	}
	// U here is b's statistic: the distribution of the sample of size n2.
	d := stats.UDist{N1: n2, N2: n1}
	if hasTies {
		d.T = t
	}
	lower := d.CDF(u)
	upper := 1 - d.CDF(u-0.5)
	return min(1, 2*min(lower, upper))
}

// mwNormalP is the two-sided p of U from the normal approximation with the
// tie and continuity corrections, for samples past the exact limits.
func mwNormalP(u float64, n1, n2 int, t []int) float64 {
	n := float64(n1 + n2)
	ties := 0.0
	for _, k := range t {
		ties += float64(k*k*k - k)
	}
	sd := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - ties/(n*(n-1))))
	z := math.Max(math.Abs(u-float64(n1*n2)/2)-0.5, 0) / sd
	return min(1, 2*distuv.UnitNormal.Survival(z))
}

// interval is the 1-g interval of the shift: the shifts the test does not
// reject at level g. Without ties these are the order statistics of the
// differences at the test's critical values (the textbook form); with
// ties the test is inverted directly, over the differences and the open
// stretches between them. An end at a stretch's open edge is given as the
// float just inside it, so the interval excludes 0 exactly when the test
// rejects a shift of 0.
func (mw *mannWhitney) interval(g float64) (float64, float64, bool) {
	if !mw.ties {
		n1, n2 := len(mw.la), len(mw.lb)
		cdf := uCDF(n1, n2)
		// c is the largest count with 2 P(U <= c) <= g; the interval
		// drops c differences from each end.
		c := -1
		for c+1 < n1*n2/2+1 && 2*cdf(float64(c+1)) <= g {
			c++
		}
		if c < 0 {
			return math.Inf(-1), math.Inf(1), false
		}
		return mw.diffs[c], mw.diffs[len(mw.diffs)-1-c], true
	}
	ds := slices.Compact(slices.Clone(mw.diffs))
	// Element k of the line: even k is the open stretch before ds[k/2]
	// (after the last for k = 2 len(ds)), odd k the difference ds[k/2].
	at := func(k int) float64 {
		switch {
		case k%2 == 1:
			return ds[k/2]
		case k == 0:
			return ds[0] - 1
		case k == 2*len(ds):
			return ds[len(ds)-1] + 1
		}
		return (ds[k/2-1] + ds[k/2]) / 2
	}
	last := 2 * len(ds)
	lo := 0
	for lo <= last && mw.pAt(at(lo)) <= g {
		lo++
	}
	hi := last
	for hi >= lo && mw.pAt(at(hi)) <= g {
		hi--
	}
	if lo == 0 || hi == last || lo > last {
		return math.Inf(-1), math.Inf(1), false
	}
	low, high := at(lo), at(hi)
	if lo%2 == 0 {
		low = math.Nextafter(ds[lo/2-1], math.Inf(1))
	}
	if hi%2 == 0 {
		high = math.Nextafter(ds[hi/2], math.Inf(-1))
	}
	return low, high, true
}

// uCDF is P(U <= u) without ties: exact for small samples, normal with
// continuity correction past exactUMax.
func uCDF(n1, n2 int) func(u float64) float64 {
	if n1 <= exactUMax && n2 <= exactUMax {
		return stats.UDist{N1: n1, N2: n2}.CDF
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
// effect and verdict of cmp from its inference, at the level g. floorAdj
// is the smallest adjusted p the design can reach (minAdjusted): past
// alpha no verdict but no-difference is possible, and the comparison says
// so instead of showing an MDE it could never detect.
func fillComparison(cmp *Comparison, inf inference, adjusted, alpha, g, floorAdj float64, fewest int) {
	cmp.Method = inf.method
	cmp.NBaseline, cmp.NCandidate = inf.n1, inf.n2
	cmp.DeltaPct = logPct(inf.shift)
	cmp.PValue = inf.p
	cmp.PAdjusted = adjusted
	cmp.CILevel = 1 - g
	cmp.Verdict = VerdictNoDifference
	if !inf.ok {
		cmp.Note = inf.why
		return
	}
	cmp.Tested = true
	if lo, hi, ok := inf.interval(g); ok {
		l, h := logPct(lo), logPct(hi)
		cmp.CILowPct, cmp.CIHighPct = &l, &h
	}
	if floorAdj > alpha {
		cmp.Unreachable = true
		cmp.FewestPerSide = fewest
		cmp.Note = fmt.Sprintf("this design cannot reach significance: with %d vs %d runs the smallest p the test can give is %s, %s after the correction across the campaign's comparisons, above alpha = %g; "+
			"no change, however large, can be called, so no detectable effect is given. %d runs per variant and client count would do",
			inf.n1, inf.n2, PValueText(inf.floor, alpha), PValueText(floorAdj, alpha), alpha, fewest)
		return
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

// minAdjusted is the smallest adjusted p comparison k can reach when every
// comparison's p may fall to its floor (the smallest p its design gives):
// under Holm, k's adjusted p is the largest of (m-j+1) p_(j) over the p's
// up to its own, so the best case puts before it a prefix of the others
// with the smallest floors, and takes the best such prefix.
func minAdjusted(floors []float64, k int, holmCorrected bool) float64 {
	if !holmCorrected {
		return floors[k]
	}
	m := len(floors)
	others := make([]float64, 0, m-1)
	for i, f := range floors {
		if i != k {
			others = append(others, f)
		}
	}
	slices.Sort(others)
	best := float64(m) * floors[k]
	worst := 0.0 // the largest (m-j+1) f_(j) over the prefix so far
	for s, f := range others {
		worst = max(worst, float64(m-s)*f)
		best = min(best, max(worst, float64(m-s-1)*floors[k]))
	}
	return min(1, best)
}

// FewestRunsPerSide is the fewest runs per variant and client count with
// which an unpaired (randomized order) campaign of m comparisons can call
// a change at alpha: the smallest n whose exact Mann-Whitney floor, times
// m under Holm's correction, is at most alpha.
func FewestRunsPerSide(m int, alpha float64, holmCorrected bool) int {
	if !holmCorrected {
		m = 1
	}
	for n := MinPerSide; n < exactUMax; n++ {
		if float64(max(m, 1))*mwFloor(n, n) <= alpha {
			return n
		}
	}
	return exactUMax
}

// UnreachableDesign says whether a campaign whose randomized order leaves
// its runs unpaired, with perSide runs per variant and client count and m
// comparisons, can never call a change at alpha: the smallest p its exact
// test gives, corrected across the m comparisons, exceeds alpha. It gives
// that smallest adjusted p and the fewest runs per side that would do. A
// paired design's t test has no floor, so only unpaired designs are
// unreachable.
func UnreachableDesign(an Analysis, perSide, m int) (minAdj float64, fewest int, unreachable bool) {
	if an.Paired || perSide < MinPerSide || m < 1 {
		return 0, 0, false
	}
	holmCorrected := an.CorrectionName() == CorrectionHolm
	floors := make([]float64, m)
	for i := range floors {
		floors[i] = mwFloor(perSide, perSide)
	}
	minAdj = minAdjusted(floors, 0, holmCorrected)
	return minAdj, FewestRunsPerSide(m, an.Alpha, holmCorrected), minAdj > an.Alpha
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
