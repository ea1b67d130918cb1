package campaign

import (
	"math"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// An adaptive campaign (--iterations auto) lets each cell choose its own
// length with Stein's two-stage rule: every variant runs the cell's first
// MinIterations iterations, the spread of those pairs' log ratios fixes
// how many pairs an interval of half-width TargetCIPct needs, and the cell
// runs that many (at most MaxIterations). The length depends only on the
// first stage and never on the delta or its p-value, which is what keeps
// the final interval's coverage at its level (report.TwoStageIterations,
// and the simulation in internal/report). Plan lays out MaxIterations per
// cell; the engine skips what a cell does not need.

// cellLength is the number of iterations per variant of the cell at
// clients, and the number its first stage asked for before the cap; ok is
// false while the first stage is incomplete. A fixed campaign's cells are
// Iterations long from the start. With several candidates the cell runs
// the longest any comparison with the baseline needs.
func (c *Config) cellLength(runs map[int]report.Run, clients int) (n, need int, ok bool) {
	if !c.IterationsAuto {
		return c.Iterations, c.Iterations, true
	}
	first := c.MinIterations
	tps := map[string][]float64{}
	for _, v := range c.Variants {
		tps[v.Name] = make([]float64, first)
	}
	for _, r := range runs {
		if s, known := tps[r.Variant]; known && r.Clients == clients && r.Iteration >= 1 && r.Iteration <= first {
			s[r.Iteration-1] = r.Value(c.metric())
		}
	}
	for _, s := range tps {
		for _, x := range s {
			if !(x > 0) {
				return 0, 0, false
			}
		}
	}
	base := tps[c.Variants[0].Name]
	for _, v := range c.Variants[1:] {
		need = max(need, report.TwoStageIterations(base, tps[v.Name], c.TargetCIPct, c.Alpha, math.MaxInt32))
	}
	return min(need, c.MaxIterations), need, true
}
