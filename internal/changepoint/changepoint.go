// Package changepoint finds the points where a series' mean changes: the
// nights a benchmark's delta got faster or slower and stayed so.
//
// The method is E-divisive means (Matteson and James, 2014, as MongoDB's
// and Apache Otava's change-point detection use it): split the series where
// the energy statistic between the two sides is largest, keep the split
// when a permutation test finds it significant, and split each side again.
// The energy statistic compares |x-y|^a distances; this package uses a = 2,
// for which it is exactly the weighted squared difference of the two
// sides' means, m*k/(m+k) * (mean(x)-mean(y))^2 (Szekely and Rizzo). That
// is what a regression in delta_pct is (a shift of the mean; a = 1 also
// reacts to a change of spread, which on a paired delta is noise of the
// host, not of the code), and it makes a candidate split O(1) from running
// sums, so a permutation costs one pass over the segment instead of a pass
// over all pairs: the permutation test stays exact and cheap enough for
// thousands of year-long series. The permutation test stops early, as
// Besag and Clifford (1991) show is valid, once enough permutations beat
// the split: most segments have no change and are dismissed after a few
// dozen permutations.
package changepoint

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
)

// Options tune the detector; the zero value takes every default.
type Options struct {
	// Significance is the largest permutation p-value a split is kept at
	// (default 0.01).
	Significance float64
	// Permutations is the most permutations a split is tested with
	// (default 199, so that p can reach 0.005).
	Permutations int
	// MinSize is the fewest points on each side of a split (default 3): a
	// change is reported once that many points confirm it.
	MinSize int
	// Seed seeds the permutations, so a series always gets the same answer.
	Seed uint64
}

// Default values of Options.
const (
	DefaultSignificance = 0.01
	DefaultPermutations = 199
	DefaultMinSize      = 3
	// exceedances is how many permutations at least as extreme as the
	// observed split end the test early (Besag and Clifford's h).
	exceedances = 10
)

func (o Options) withDefaults() Options {
	if o.Significance <= 0 {
		o.Significance = DefaultSignificance
	}
	if o.Permutations <= 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MinSize <= 0 {
		o.MinSize = DefaultMinSize
	}
	return o
}

// Change is one change point.
type Change struct {
	// Index is the first point after the change.
	Index int
	// Before and After are the means of the segments on either side of the
	// change, bounded by the neighbouring change points.
	Before, After float64
	// PValue is the permutation p-value of the split when it was found.
	PValue float64
}

// Detect returns the change points of x in index order.
func Detect(x []float64, o Options) []Change {
	o = o.withDefaults()
	d := detector{o: o, rng: rand.New(rand.NewPCG(o.Seed, uint64(len(x)))), buf: make([]float64, len(x))}
	pvalues := map[int]float64{}
	d.split(x, 0, pvalues)
	idx := make([]int, 0, len(pvalues))
	for i := range pvalues {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]Change, len(idx))
	for j, i := range idx {
		lo, hi := 0, len(x)
		if j > 0 {
			lo = idx[j-1]
		}
		if j+1 < len(idx) {
			hi = idx[j+1]
		}
		out[j] = Change{Index: i, Before: mean(x[lo:i]), After: mean(x[i:hi]), PValue: pvalues[i]}
	}
	return out
}

// DetectAll runs Detect on each series, spread over the machine's CPUs; the
// answer of series i is at i.
func DetectAll(series [][]float64, o Options) [][]Change {
	out := make([][]Change, len(series))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = Detect(series[i], o)
			}
		}()
	}
	for i := range series {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

type detector struct {
	o   Options
	rng *rand.Rand
	buf []float64
}

// split tests the best split of seg (which starts at offset in the whole
// series) and, when it is significant, records it and splits both sides.
func (d *detector) split(seg []float64, offset int, found map[int]float64) {
	if len(seg) < 2*d.o.MinSize {
		return
	}
	at, stat := best(seg, d.o.MinSize)
	p := d.pvalue(seg, stat)
	if p > d.o.Significance {
		return
	}
	found[offset+at] = p
	d.split(seg[:at], offset, found)
	d.split(seg[at:], offset+at, found)
}

// best returns the split of seg with the largest statistic, and that
// statistic: m*k/(m+k) * (mean(left)-mean(right))^2 over splits with at
// least minSize points each side, computed as (k*sum(left) -
// m*sum(right))^2 / (m*k*n) to spend one division a split.
func best(seg []float64, minSize int) (int, float64) {
	n := len(seg)
	var total float64
	for _, v := range seg {
		total += v
	}
	var left float64
	at, max := -1, -1.0
	for i := 0; i < n-minSize; i++ {
		left += seg[i]
		m := i + 1
		if m < minSize {
			continue
		}
		k := n - m
		d := left*float64(k) - (total-left)*float64(m)
		if q := d * d / float64(m*k); q > max {
			at, max = m, q
		}
	}
	return at, max / float64(n)
}

// pvalue is the permutation p-value of a best split with statistic stat:
// the share of shuffles of seg whose best split is at least as large,
// counting the observed order as one of them.
func (d *detector) pvalue(seg []float64, stat float64) float64 {
	perm := d.buf[:len(seg)]
	copy(perm, seg)
	// A relative margin keeps rounding from counting the observed order's
	// own statistic, recomputed in another order, as a larger one.
	stat *= 1 - 1e-12
	hits := 0
	for i := 1; i <= d.o.Permutations; i++ {
		d.shuffle(perm)
		if _, q := best(perm, d.o.MinSize); q >= stat {
			hits++
			if hits == exceedances {
				return float64(hits) / float64(i)
			}
		}
	}
	return float64(hits+1) / float64(d.o.Permutations+1)
}

// shuffle permutes x uniformly (Fisher-Yates), drawing two indexes from
// each 64-bit random number by Lemire's multiply-shift: for segments of
// fewer than 2^16 points the bias is below 2^-16, far under the test's
// resolution, and the shuffle is several times cheaper than rand.Shuffle.
func (d *detector) shuffle(x []float64) {
	var r uint64
	half := false
	for i := len(x) - 1; i > 0; i-- {
		var u uint32
		if half {
			u = uint32(r >> 32)
		} else {
			r = d.rng.Uint64()
			u = uint32(r)
		}
		half = !half
		j := int(uint64(u) * uint64(i+1) >> 32)
		x[i], x[j] = x[j], x[i]
	}
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
