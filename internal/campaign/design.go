package campaign

import (
	"fmt"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// DesignWarning says, before anything runs, that the campaign's design
// cannot reach significance: a randomized order leaves the runs unpaired,
// and with few iterations the exact Mann-Whitney test's smallest p,
// corrected across every comparison (client counts times candidates),
// exceeds alpha, so no change however large could be called. It names the
// fewest iterations that would do; "" when the design can reach
// significance (or has no test at all, which Validate's callers say
// themselves).
func (c *Config) DesignWarning() string {
	if c.IterationsAuto || len(c.Variants) < 2 || len(c.Clients) == 0 {
		return ""
	}
	m := len(c.Clients) * (len(c.Variants) - 1)
	an := report.AnalysisFor(c.Order, c.Alpha)
	minAdj, fewest, unreachable := report.UnreachableDesign(an, c.Iterations, m)
	if !unreachable {
		return ""
	}
	return fmt.Sprintf("with %d iterations per variant in randomized order and %d comparisons (client counts times candidates), the smallest p the exact test can give is %s after Holm's correction, above alpha = %g: "+
		"no change, however large, can be called. Use at least %d iterations, or the alternating order, whose paired test has no such floor",
		c.Iterations, m, report.PValueText(minAdj, c.Alpha), c.Alpha, fewest)
}
