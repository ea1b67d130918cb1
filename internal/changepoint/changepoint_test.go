package changepoint

import (
	"math"
	"math/rand/v2"
	"testing"
)

func noise(rng *rand.Rand, n int, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * sd
	}
	return x
}

// TestFlatSeriesRarelyChange: flat noisy series of 30 points get a change
// point in at most 5% of cases (the test's significance is 1%).
func TestFlatSeriesRarelyChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 2000
	flagged := 0
	for i := range trials {
		if len(Detect(noise(rng, 30, 1.5), Options{Seed: uint64(i)})) > 0 {
			flagged++
		}
	}
	if rate := float64(flagged) / trials; rate > 0.05 {
		t.Fatalf("%d of %d flat series (%.1f%%) got a change point, want at most 5%%", flagged, trials, 100*rate)
	} else {
		t.Logf("false positives: %d of %d (%.1f%%)", flagged, trials, 100*rate)
	}
}

// TestStepFoundAtItsIndex: a step of 4 standard deviations with at least 5
// points on each side is found at the right index +-1 in at least 90% of
// series, and the means either side are the step's.
func TestStepFoundAtItsIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const trials, n, sd = 2000, 30, 2.0
	found, extra := 0, 0
	for i := range trials {
		at := 5 + rng.IntN(n-9) // 5..25: at least 5 points each side
		x := noise(rng, n, sd)
		step := 4 * sd
		if rng.IntN(2) == 0 {
			step = -step
		}
		for j := at; j < n; j++ {
			x[j] += step
		}
		cs := Detect(x, Options{Seed: uint64(i)})
		ok := false
		for _, c := range cs {
			if c.Index >= at-1 && c.Index <= at+1 {
				ok = true
				if got := c.After - c.Before; math.Abs(got-step) > 2.5*sd {
					t.Errorf("series %d: change at %d moves the mean by %.2f, want about %.2f", i, c.Index, got, step)
				}
				if c.PValue > DefaultSignificance {
					t.Errorf("series %d: change kept with p = %v > %v", i, c.PValue, DefaultSignificance)
				}
			}
		}
		if ok {
			found++
		}
		if len(cs) > 1 {
			extra++
		}
	}
	if rate := float64(found) / trials; rate < 0.90 {
		t.Fatalf("step found at its index +-1 in %d of %d series (%.1f%%), want at least 90%%", found, trials, 100*rate)
	} else {
		t.Logf("found at +-1: %d of %d (%.1f%%); series with a spurious extra change: %d", found, trials, 100*rate, extra)
	}
	if rate := float64(extra) / trials; rate > 0.05 {
		t.Errorf("%d of %d step series (%.1f%%) got more than one change point, want at most 5%%", extra, trials, 100*rate)
	}
}

// TestTwoChanges: a regression that is fixed later gives two change points
// with the segment means of each level.
func TestTwoChanges(t *testing.T) {
	x := noise(rand.New(rand.NewPCG(5, 6)), 60, 0.5)
	for i := 20; i < 40; i++ {
		x[i] -= 5
	}
	cs := Detect(x, Options{})
	if len(cs) != 2 {
		t.Fatalf("got %d change points (%+v), want 2", len(cs), cs)
	}
	if cs[0].Index < 19 || cs[0].Index > 21 || cs[1].Index < 39 || cs[1].Index > 41 {
		t.Fatalf("change points at %d and %d, want 20 and 40 (+-1)", cs[0].Index, cs[1].Index)
	}
	if math.Abs(cs[0].Before) > 0.5 || math.Abs(cs[0].After+5) > 0.5 || math.Abs(cs[1].Before+5) > 0.5 || math.Abs(cs[1].After) > 0.5 {
		t.Fatalf("segment means %+v, want 0, -5, 0", cs)
	}
	if cs[0].After != cs[1].Before {
		t.Fatalf("the middle segment's mean differs between its two change points: %v vs %v", cs[0].After, cs[1].Before)
	}
}

// TestDeterministic: the same series and seed give the same answer.
func TestDeterministic(t *testing.T) {
	x := noise(rand.New(rand.NewPCG(7, 8)), 40, 1)
	for i := 25; i < 40; i++ {
		x[i] += 1.2
	}
	a, b := Detect(x, Options{Seed: 9}), Detect(x, Options{Seed: 9})
	if len(a) != len(b) {
		t.Fatalf("two runs gave %d and %d change points", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("two runs differ: %+v vs %+v", a[i], b[i])
		}
	}
}

func TestShortAndConstantSeries(t *testing.T) {
	for _, x := range [][]float64{nil, {1}, {1, 2, 3, 4, 5}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}} {
		if cs := Detect(x, Options{}); len(cs) != 0 {
			t.Errorf("Detect(%v) = %+v, want no change point", x, cs)
		}
	}
}

// BenchmarkDetectYear is the target of `history changes`: 1,000 series of
// 365 nights (a third flat, a third with one step, a third with three)
// under 5 s.
func BenchmarkDetectYear(b *testing.B) {
	rng := rand.New(rand.NewPCG(10, 11))
	series := make([][]float64, 1000)
	for i := range series {
		x := noise(rng, 365, 1.5)
		for s := 0; s < i%3*(i%3); s++ { // 0, 1 or 4 steps
			at := 30 + rng.IntN(300)
			for j := at; j < len(x); j++ {
				x[j] += 3
			}
		}
		series[i] = x
	}
	b.ResetTimer()
	for b.Loop() {
		DetectAll(series, Options{})
	}
}
