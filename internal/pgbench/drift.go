package pgbench

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Within-run drift is judged against the run's own per-second noise: a
// trend is flagged when it is both significant (DriftAlpha) and large
// enough to matter (DriftMinPct over the run).
const (
	DriftAlpha  = 0.01
	DriftMinPct = 2.0
)

// DriftResult is the trend of a run's per-second throughput.
type DriftResult struct {
	// Pct is the fitted change from the run's first to its last second, in
	// percent of the fitted start.
	Pct float64
	// P is the two-sided p-value of "no trend".
	P float64
	// Drifting is P < DriftAlpha and |Pct| >= DriftMinPct.
	Drifting bool
}

// DriftTrend fits a line to a per-second TPS series, after dropping the
// first and last seconds (partial, and the ramp-up and ramp-down of the
// clients), and tests its slope against the series' own noise. Seconds of
// a run are not independent (a checkpoint or a busy neighbour lasts), so
// the slope's standard error is widened by the lag-1 autocorrelation of the
// residuals (an effective sample size n(1-r)/(1+r)). Series with fewer
// than 5 seconds left give no trend.
func DriftTrend(series []float64) DriftResult {
	if len(series) < 7 {
		return DriftResult{P: 1}
	}
	ys := series[1 : len(series)-1]
	n := len(ys)
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	alpha, beta := stat.LinearRegression(xs, ys, nil, false)
	if alpha <= 0 {
		return DriftResult{P: 1}
	}
	res := DriftResult{Pct: beta * float64(n-1) / alpha * 100, P: 1}
	resid := make([]float64, n)
	var sse float64
	for i := range ys {
		resid[i] = ys[i] - (alpha + beta*xs[i])
		sse += resid[i] * resid[i]
	}
	sxx := stat.Variance(xs, nil) * float64(n-1)
	// The lag-1 estimate is biased low in short series; correct it to
	// first order (Marriott and Pope) before it sizes the error.
	r := lag1(resid)
	r = math.Min(0.9, r+(1+3*r)/float64(n))
	neff := float64(n) * (1 - r) / (1 + r)
	neff = math.Min(float64(n), math.Max(neff, 3))
	dof := neff - 2
	if sse == 0 {
		if beta != 0 {
			res.P = 0
		}
	} else {
		se := math.Sqrt(sse/float64(n-2)/sxx) * math.Sqrt(float64(n)/neff)
		res.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(dof, 1)}.Survival(math.Abs(beta)/se)
	}
	res.Drifting = res.P < DriftAlpha && math.Abs(res.Pct) >= DriftMinPct
	return res
}

// lag1 is the lag-1 autocorrelation of xs (mean zero, as residuals are),
// clamped to [0, 0.9]: negative correlation would shrink the error, and
// near 1 the effective sample size is meaningless.
func lag1(xs []float64) float64 {
	var num, den float64
	for i, x := range xs {
		den += x * x
		if i > 0 {
			num += x * xs[i-1]
		}
	}
	if den == 0 {
		return 0
	}
	return math.Min(0.9, math.Max(0, num/den))
}
