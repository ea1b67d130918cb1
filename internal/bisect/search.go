package bisect

import (
	"math"
	"sort"
)

// Classes of a step.
const (
	// ClassGood: the commit performs like good.
	ClassGood = "good"
	// ClassBad: the commit performs like bad.
	ClassBad = "bad"
	// ClassSkipped: still unclear after every round; skipped as git bisect
	// skip does.
	ClassSkipped = "skipped"
	// ClassBuildFailed: the commit does not build; skipped too.
	ClassBuildFailed = "build-failed"
)

// search is the state of a bisection over the positions 0..n of a
// first-parent range: 0 is good, n is bad, 1..n-1 the commits between.
type search struct {
	// good is the last position known good, bad the first known bad.
	good, bad int
	// skipped holds the positions that were skipped, with their class.
	skipped map[int]string
}

func newSearch(n int) *search {
	return &search{good: 0, bad: n, skipped: map[int]string{}}
}

// candidates are the positions that may still hold the first bad commit
// and have not been tested: those strictly between good and bad that were
// not skipped.
func (s *search) candidates() []int {
	var out []int
	for p := s.good + 1; p < s.bad; p++ {
		if _, skip := s.skipped[p]; !skip {
			out = append(out, p)
		}
	}
	return out
}

// next is the position to test: the candidate nearest the middle of
// good..bad, the later one first on a tie; false when none is left.
func (s *search) next() (int, bool) {
	cs := s.candidates()
	if len(cs) == 0 {
		return 0, false
	}
	mid := (s.good + s.bad) / 2
	sort.SliceStable(cs, func(i, j int) bool {
		di, dj := abs(cs[i]-mid), abs(cs[j]-mid)
		if di != dj {
			return di < dj
		}
		return cs[i] > cs[j]
	})
	return cs[0], true
}

// mark records the class of the commit at position p.
func (s *search) mark(p int, class string) {
	switch class {
	case ClassGood:
		if p > s.good {
			s.good = p
		}
	case ClassBad:
		if p < s.bad {
			s.bad = p
		}
	default:
		s.skipped[p] = class
	}
}

// found says the first bad commit is known: the position after the last
// good one is bad.
func (s *search) found() bool { return s.bad == s.good+1 }

// stepsLeft is how many more steps the bisection takes at most when no
// candidate is skipped: each halves what is left, and the first bad commit
// is one of the candidates or bad itself.
func (s *search) stepsLeft() int {
	return int(math.Ceil(math.Log2(float64(len(s.candidates()) + 1))))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
