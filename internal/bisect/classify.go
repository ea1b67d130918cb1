package bisect

import (
	"fmt"
	"math"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// How a bisect decides, from the statistics of internal/report (the paired
// t test on log ratios of the alternating order, Holm's correction across
// the comparisons of a look, the interval of the test that gives the
// verdict):
//
//   - The endpoints: bad against good must differ significantly in the
//     bisect's direction at every client count; the measured change, D, is
//     the scale every later decision is judged on.
//   - A commit is measured against both endpoints in one campaign. It is bad
//     when it differs from good significantly in the bisect's direction and
//     its whole interval against bad lies within D/2 of bad; good when it
//     differs from bad significantly the other way and its whole interval
//     against good lies within D/2 of good. Anything else (no difference
//     from either yet, or halfway between them) is unclear and gets another
//     round.
//   - Each look (a round, its runs pooled with the rounds before it) decides
//     at alpha divided by the most rounds there can be, so that looking
//     again after an unclear round keeps the chance of a wrong call within
//     alpha (Bonferroni over the looks).

// Delta is one comparison as a bisect reports it: a side against a
// reference, as a percent change of the figure of merit (TPS, or NOPM
// under TPC-C), with the interval of the test that gives the verdict.
type Delta struct {
	DeltaPct  float64  `json:"delta_pct"`
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	CILevel   float64  `json:"ci_level"`
	PAdjusted float64  `json:"p_adjusted"`
	// Verdict is report's: faster, slower or no-difference.
	Verdict string `json:"verdict"`
	// Pairs is the number of paired iterations (or runs per side, unpaired).
	Pairs int `json:"pairs"`
}

// deltaOf is cmp (candidate against baseline) as a Delta.
func deltaOf(cmp report.Comparison) Delta {
	return Delta{DeltaPct: cmp.DeltaPct, CILowPct: cmp.CILowPct, CIHighPct: cmp.CIHighPct, CILevel: cmp.CILevel,
		PAdjusted: cmp.PAdjusted, Verdict: cmp.Verdict, Pairs: min(cmp.NBaseline, cmp.NCandidate)}
}

// inverse is cmp the other way round: the baseline against the candidate.
// On the log scale the estimate and the interval change sign, so the
// interval of the inverse is exact, not an approximation.
func inverse(cmp report.Comparison) Delta {
	d := deltaOf(cmp)
	inv := func(pct float64) float64 { return (1/(1+pct/100) - 1) * 100 }
	d.DeltaPct = inv(cmp.DeltaPct)
	if cmp.CILowPct != nil && cmp.CIHighPct != nil {
		lo, hi := inv(*cmp.CIHighPct), inv(*cmp.CILowPct)
		d.CILowPct, d.CIHighPct = &lo, &hi
	}
	switch cmp.Verdict {
	case report.VerdictFaster:
		d.Verdict = report.VerdictSlower
	case report.VerdictSlower:
		d.Verdict = report.VerdictFaster
	}
	return d
}

// String is the delta as the report prints it: -48.1% [-50.3%, -45.8%].
func (d Delta) String() string {
	if d.CILowPct == nil || d.CIHighPct == nil {
		return fmt.Sprintf("%+.1f%% [no interval]", d.DeltaPct)
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", d.DeltaPct, *d.CILowPct, *d.CIHighPct)
}

// within says the whole interval of d lies within ±margin, a log ratio.
func (d Delta) within(margin float64) bool {
	if d.CILowPct == nil || d.CIHighPct == nil {
		return false
	}
	lo, hi := math.Log1p(*d.CILowPct/100), math.Log1p(*d.CIHighPct/100)
	return lo > -margin && hi < margin
}

// badVerdict is the verdict of bad against good that the direction
// expects; goodVerdict the other.
func badVerdict(direction string) string {
	if direction == DirectionImprovement {
		return report.VerdictFaster
	}
	return report.VerdictSlower
}

func goodVerdict(direction string) string {
	if direction == DirectionImprovement {
		return report.VerdictSlower
	}
	return report.VerdictFaster
}

// Outcomes of the endpoints' check.
const (
	EndpointsConfirmed = "confirmed"
	// EndpointsOpposite: bad differs from good the other way.
	EndpointsOpposite = "opposite"
	// EndpointsNoDifference: no significant difference (yet).
	EndpointsNoDifference = "no-difference"
)

// EndpointCell is bad against good at one client count.
type EndpointCell struct {
	Clients   int   `json:"clients"`
	BadVsGood Delta `json:"bad_vs_good"`
}

// judgeEndpoints reads the cells of a campaign whose baseline is good and
// candidate bad: confirmed when every client count differs in the
// direction, opposite when one differs the other way.
func judgeEndpoints(cells []report.Cell, direction string) ([]EndpointCell, string) {
	var out []EndpointCell
	outcome := EndpointsConfirmed
	for _, c := range cells {
		cmp, ok := comparison(c, variantBad)
		if !ok {
			return out, EndpointsNoDifference
		}
		d := deltaOf(cmp)
		out = append(out, EndpointCell{Clients: c.Clients, BadVsGood: d})
		switch d.Verdict {
		case badVerdict(direction):
		case goodVerdict(direction):
			outcome = EndpointsOpposite
		default:
			if outcome == EndpointsConfirmed {
				outcome = EndpointsNoDifference
			}
		}
	}
	return out, outcome
}

// StepCell is the commit under test against both endpoints at one client
// count.
type StepCell struct {
	Clients int   `json:"clients"`
	VsGood  Delta `json:"vs_good"`
	VsBad   Delta `json:"vs_bad"`
	// Class is good, bad or unclear at this client count.
	Class string `json:"class"`
}

// classUnclear is a look that decides nothing yet.
const classUnclear = "unclear"

// judgeStep reads the cells of a campaign whose baseline is the commit
// under test and whose candidates are good and bad, with endpoints, the
// endpoints' measured change per client count. The commit is good or bad
// when every client count says so; unclear otherwise.
func judgeStep(cells []report.Cell, endpoints []EndpointCell, direction string) ([]StepCell, string) {
	margin := map[int]float64{}
	for _, e := range endpoints {
		margin[e.Clients] = math.Abs(math.Log1p(e.BadVsGood.DeltaPct/100)) / 2
	}
	var out []StepCell
	class := ""
	for _, c := range cells {
		g, gok := comparison(c, variantGood)
		b, bok := comparison(c, variantBad)
		if !gok || !bok {
			return out, classUnclear
		}
		sc := StepCell{Clients: c.Clients, VsGood: inverse(g), VsBad: inverse(b), Class: classUnclear}
		m := margin[c.Clients]
		switch {
		case sc.VsGood.Verdict == badVerdict(direction) && sc.VsBad.within(m):
			sc.Class = ClassBad
		case sc.VsBad.Verdict == goodVerdict(direction) && sc.VsGood.within(m):
			sc.Class = ClassGood
		}
		out = append(out, sc)
		switch {
		case class == "":
			class = sc.Class
		case class != sc.Class:
			class = classUnclear
		}
	}
	if class == "" {
		class = classUnclear
	}
	return out, class
}

// comparison is the comparison of the candidate variant in cell c.
func comparison(c report.Cell, candidate string) (report.Comparison, bool) {
	for _, cmp := range c.Comparisons {
		if cmp.Candidate == candidate {
			return cmp, true
		}
	}
	return report.Comparison{}, false
}

// describeEndpoints is the endpoints per client count for messages: "1 client: bad
// vs good -48.1% [-50.3%, -45.8%]".
func describeEndpoints(cells []EndpointCell) string {
	var parts []string
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%s: bad vs good %s (%s, p = %.2g)", clientsText(c.Clients), c.BadVsGood, c.BadVsGood.Verdict, c.BadVsGood.PAdjusted))
	}
	return strings.Join(parts, "; ")
}

func clientsText(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}
