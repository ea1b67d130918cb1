package report

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSeriesKeyHostClass(t *testing.T) {
	for _, c := range []struct {
		h    HistoryHost
		want string
	}{
		{HistoryHost{InstanceType: "c6i.metal", CPUModel: "Intel Xeon", CPUs: 128}, "c6i.metal"},
		{HistoryHost{CPUModel: "AMD  EPYC 9654", CPUs: 192}, "AMD EPYC 9654 x 192"},
		{HistoryHost{}, "unknown CPU x 0"},
	} {
		if got := c.h.Class(); got != c.want {
			t.Errorf("Class(%+v) = %q, want %q", c.h, got, c.want)
		}
	}
}

// TestHistoryChangesOrder: points out of order are put in time order per
// series before detection, and the change names the first campaign after
// it.
func TestHistoryChangesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	key := SeriesKey{Host: "h", Mode: "select-only", Clients: 8, Baseline: "a", Candidate: "b"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var points []SeriesPoint
	for _, i := range rng.Perm(24) {
		d := rng.NormFloat64() * 0.5
		if i >= 12 {
			d -= 5
		}
		points = append(points, SeriesPoint{Key: key, Campaign: fmt.Sprintf("c%02d", i), RecordedAt: t0.AddDate(0, 0, i), DeltaPct: d})
	}
	other := key
	other.Clients = 1
	points = append(points, SeriesPoint{Key: other, Campaign: "z", RecordedAt: t0})
	got := HistoryChanges(points)
	if len(got) != 2 || got[0].Key != other || got[1].Key != key {
		t.Fatalf("series = %+v, want the 1-client series then the 8-client one", got)
	}
	if cs := got[1].Changes; len(cs) != 1 || cs[0].Campaign != "c12" || cs[0].Index != 12 || !cs[0].RecordedAt.Equal(t0.AddDate(0, 0, 12)) {
		t.Fatalf("changes = %+v, want one at c12", got[1].Changes)
	}
	if got[0].Changes == nil || len(got[0].Changes) != 0 {
		t.Fatalf("a series without change has changes %#v, want an empty list (JSON [])", got[0].Changes)
	}
}

// BenchmarkHistoryChanges is the target of `history changes`: 1,000 series
// of 365 nights (a third flat, a third with one step, a third with four)
// grouped, ordered and searched under 5 s.
func BenchmarkHistoryChanges(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var points []SeriesPoint
	for s := range 1000 {
		key := SeriesKey{Host: "c6i.metal", Mode: "select-only", Scale: 100, Clients: s, Baseline: "release", Candidate: "master"}
		steps := map[int]bool{}
		for range s % 3 * (s % 3) {
			steps[30+rng.IntN(300)] = true
		}
		level := 0.0
		for n := range 365 {
			if steps[n] {
				level += 3
			}
			points = append(points, SeriesPoint{Key: key, Campaign: fmt.Sprintf("s%d-n%d", s, n), RecordedAt: t0.AddDate(0, 0, n),
				DeltaPct: level + 1.5*rng.NormFloat64()})
		}
	}
	rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
	b.ResetTimer()
	for b.Loop() {
		HistoryChanges(points)
	}
}
