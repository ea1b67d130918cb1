package bisect

import (
	"fmt"
	"slices"
	"testing"
)

// bisectWith runs a search over n positions whose first bad one is first,
// skipping the positions in skip, and returns the positions it tested.
func bisectWith(n, first int, skip map[int]string) (*search, []int) {
	s := newSearch(n)
	var tested []int
	for {
		p, ok := s.next()
		if !ok {
			return s, tested
		}
		tested = append(tested, p)
		switch {
		case skip[p] != "":
			s.mark(p, skip[p])
		case p >= first:
			s.mark(p, ClassBad)
		default:
			s.mark(p, ClassGood)
		}
	}
}

func TestSearchFindsEveryPosition(t *testing.T) {
	for n := 2; n <= 40; n++ {
		for first := 1; first <= n; first++ {
			s, tested := bisectWith(n, first, nil)
			if !s.found() || s.bad != first {
				t.Fatalf("n=%d first=%d: search ended at good %d, bad %d, want bad %d", n, first, s.good, s.bad, first)
			}
			if bound := newSearch(n).stepsLeft(); len(tested) > bound {
				t.Errorf("n=%d first=%d: %d steps (%v), more than the %d predicted", n, first, len(tested), tested, bound)
			}
		}
	}
}

func TestSearchOrder(t *testing.T) {
	// The regression at 4 of 6: the middle (3) is good, then 4 is bad.
	_, tested := bisectWith(6, 4, nil)
	if want := []int{3, 4}; !slices.Equal(tested, want) {
		t.Errorf("tested %v, want %v", tested, want)
	}
	if got, want := newSearch(6).stepsLeft(), 3; got != want {
		t.Errorf("steps left of 5 candidates = %d, want %d", got, want)
	}
}

func TestSearchSkips(t *testing.T) {
	tests := []struct {
		n, first  int
		skip      map[int]string
		wantTests []int
		good, bad int
		found     bool
	}{
		// The middle does not build: its later neighbour is tried next.
		{6, 5, map[int]string{3: ClassBuildFailed}, []int{3, 4, 5}, 4, 5, true},
		// A skipped commit right before the first bad one leaves a
		// range of two: the skipped one or the bad one.
		{6, 4, map[int]string{3: ClassSkipped}, []int{3, 4, 2}, 2, 4, false},
		// Everything between skipped: the range stays whole.
		{3, 2, map[int]string{1: ClassSkipped, 2: ClassBuildFailed}, []int{1, 2}, 0, 3, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n, tt.first, tt.skip), func(t *testing.T) {
			s, tested := bisectWith(tt.n, tt.first, tt.skip)
			if !slices.Equal(tested, tt.wantTests) {
				t.Errorf("tested %v, want %v", tested, tt.wantTests)
			}
			if s.good != tt.good || s.bad != tt.bad || s.found() != tt.found || len(s.candidates()) != 0 {
				t.Errorf("ended at good %d, bad %d, found %v, candidates %v; want %d, %d, %v, none", s.good, s.bad, s.found(), s.candidates(), tt.good, tt.bad, tt.found)
			}
		})
	}
}
