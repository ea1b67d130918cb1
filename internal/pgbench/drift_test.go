package pgbench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simulatedSeries is a per-second TPS series: base throughput, a linear
// drift of driftPct over the run, and AR(1) noise of the given CV and
// lag-1 correlation, as a shared machine's seconds are.
func simulatedSeries(rng *rand.Rand, seconds int, cv, rho, driftPct float64) []float64 {
	s := make([]float64, seconds)
	e := 0.0
	for i := range s {
		e = rho*e + math.Sqrt(1-rho*rho)*rng.NormFloat64()
		trend := 1 + driftPct/100*float64(i)/float64(seconds-1)
		s[i] = 10000 * trend * (1 + cv*e)
	}
	return s
}

// TestDriftSimulation: noise alone is rarely called drift, at 10 s or
// 60 s, and a 5% linear drift over a 60 s run is found, where the fixed
// first-versus-last-third rule flagged half of the noise-only 10 s runs
// and missed most 5% drifts.
func TestDriftSimulation(t *testing.T) {
	const n = 4000
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct {
		seconds  int
		cv       float64 // per-second noise
		driftPct float64
		lo, hi   float64 // bounds of the flagged rate
	}{
		{10, 0.01, 0, 0, 0.02},
		{10, 0.03, 0, 0, 0.02},
		{60, 0.01, 0, 0, 0.02},
		{60, 0.03, 0, 0, 0.02},
		{60, 0.01, 5, 0.95, 1},
		{60, 0.01, -5, 0.95, 1},
		// Noisier seconds need a longer run to see the same drift.
		{300, 0.03, 5, 0.90, 1},
	} {
		flagged := 0
		for range n {
			if DriftTrend(simulatedSeries(rng, tt.seconds, tt.cv, 0.3, tt.driftPct)).Drifting {
				flagged++
			}
		}
		rate := float64(flagged) / n
		if rate < tt.lo || rate > tt.hi {
			t.Errorf("%d s, CV %g, drift %+g%%: flagged %.1f%% of runs, want within [%.0f%%, %.0f%%]", tt.seconds, tt.cv, tt.driftPct, rate*100, tt.lo*100, tt.hi*100)
		} else {
			t.Logf("%d s, CV %g, drift %+g%%: flagged %.1f%% of runs", tt.seconds, tt.cv, tt.driftPct, rate*100)
		}
	}
}

func TestDriftTrend(t *testing.T) {
	flat := []float64{5, 100, 100, 100, 100, 100, 100, 100, 3}
	if r := DriftTrend(flat); r.Drifting || r.Pct != 0 || r.P != 1 {
		t.Errorf("flat series: %+v, want no drift, 0%%, p 1", r)
	}
	line := []float64{0, 100, 102, 104, 106, 108, 110, 112, 0}
	if r := DriftTrend(line); !r.Drifting || math.Abs(r.Pct-12) > 1e-9 || r.P != 0 {
		t.Errorf("exact +12%% line: %+v, want drifting +12%% at p 0", r)
	}
	if r := DriftTrend([]float64{1, 2, 3, 4, 5, 6}); r.Drifting || r.P != 1 {
		t.Errorf("6 seconds: %+v, want too short for a trend", r)
	}
}
