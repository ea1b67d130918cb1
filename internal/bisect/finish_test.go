package bisect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// finishWith settles a bisect of positions 0..4 whose endpoints ended as
// ep and whose steps are steps, and returns its result as bisect.json has
// it.
func finishWith(t *testing.T, ep Endpoints, steps []Step) *Result {
	t.Helper()
	out := t.TempDir()
	commits := make([]Commit, 5)
	for i := range commits {
		commits[i] = Commit{Hash: strings.Repeat(string(rune('a'+i)), 40), Subject: "commit " + string(rune('0'+i))}
	}
	b := &bisector{cfg: &Config{StepRounds: 3}, emit: func(campaign.Event) {}, out: out, commits: commits, search: newSearch(4)}
	for i := range steps {
		steps[i].Commit = commits[steps[i].Position]
		b.search.mark(steps[i].Position, steps[i].Class)
	}
	b.res = &Result{SchemaVersion: SchemaVersion, Direction: DirectionRegression, Good: commits[0], Bad: commits[4], Endpoints: ep, Steps: steps}
	if _, err := b.finish(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeResult(raw, ResultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, SummaryFile)); err != nil {
		t.Errorf("summary.md: %v", err)
	}
	return res
}

func TestFinishOutcomes(t *testing.T) {
	lo, hi := -1.5, 1.2
	flat := []EndpointCell{{Clients: 8, BadVsGood: Delta{DeltaPct: -0.2, CILowPct: &lo, CIHighPct: &hi, PAdjusted: 0.8, Verdict: report.VerdictNoDifference}}}
	res := finishWith(t, Endpoints{Outcome: EndpointsNoDifference, Rounds: 3, Cells: flat}, nil)
	if res.Outcome != OutcomeNothing || res.FirstBad != nil ||
		!strings.Contains(res.Answer, "nothing to bisect: bad is not significantly slower than good at every client count after 3 rounds (8 clients: bad vs good -0.2% [-1.5%, +1.2%]") {
		t.Errorf("no difference: outcome %s, answer %q", res.Outcome, res.Answer)
	}

	up, ulo, uhi := 30.0, 20.0, 41.0
	faster := []EndpointCell{{Clients: 1, BadVsGood: Delta{DeltaPct: up, CILowPct: &ulo, CIHighPct: &uhi, Verdict: report.VerdictFaster}}}
	res = finishWith(t, Endpoints{Outcome: EndpointsOpposite, Rounds: 1, Cells: faster}, nil)
	if res.Outcome != OutcomeNothing || !strings.Contains(res.Answer, "significantly the other way") || !strings.Contains(res.Answer, "--direction improvement") {
		t.Errorf("opposite: outcome %s, answer %q", res.Outcome, res.Answer)
	}

	confirmed := Endpoints{Outcome: EndpointsConfirmed, Rounds: 1}
	// 2 good, 3 skipped, 4 (bad) left: two suspects.
	res = finishWith(t, confirmed, []Step{
		{N: 1, Position: 2, Class: ClassGood},
		{N: 2, Position: 3, Class: ClassSkipped, Note: "unclear after 3 rounds"},
	})
	if res.Outcome != OutcomeRange || len(res.Range) != 2 || res.Range[0].Status != ClassSkipped || res.Range[1].Status != ClassBad ||
		!strings.Contains(res.Answer, "one of 2 commits") || !strings.Contains(res.Answer, "skipped: unclear after 3 rounds") {
		t.Errorf("range: outcome %s, range %+v, answer %q", res.Outcome, res.Range, res.Answer)
	}

	// Every commit before bad is good: bad is the first bad commit.
	res = finishWith(t, confirmed, []Step{{N: 1, Position: 2, Class: ClassGood}, {N: 2, Position: 3, Class: ClassGood}})
	if res.Outcome != OutcomeFirstBad || res.FirstBad == nil || res.FirstBad.Hash != strings.Repeat("e", 40) || !strings.Contains(res.Answer, "it is bad itself") {
		t.Errorf("bad itself: outcome %s, first bad %+v, answer %q", res.Outcome, res.FirstBad, res.Answer)
	}
}
