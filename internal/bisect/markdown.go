package bisect

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// WriteMarkdown writes summary.md: the answer, the endpoints, a table of
// the steps, how each was decided, what was measured and built, the time
// it took and the command that reproduces it.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	md := report.MarkdownText
	fmt.Fprintf(&b, "# Performance bisect: %s\n\n", md(r.GitURL))
	switch {
	case r.FirstBad != nil:
		fmt.Fprintf(&b, "**First bad commit: `%s` %s** (authored %s)\n\n", r.FirstBad.Hash, md(r.FirstBad.Subject), r.FirstBad.AuthorDate.UTC().Format(time.RFC3339))
		fmt.Fprintf(&b, "%s.\n\n", md(upperFirst(firstBadEvidence(*r.FirstBad, r.Steps, r.FirstBad.Hash == r.Bad.Hash, r.Endpoints))))
	case r.Outcome == OutcomeRange:
		fmt.Fprintf(&b, "**The first bad commit is one of %d commits.**\n\n%s.\n\n", len(r.Range), md(upperFirst(r.Answer)))
	default:
		fmt.Fprintf(&b, "**Nothing to bisect.**\n\n%s.\n\n", md(upperFirst(r.Answer)))
	}
	dir := "bad slower than good"
	if r.Direction == DirectionImprovement {
		dir = "bad faster than good"
	}
	fmt.Fprintf(&b, "Good `%s`%s %s, bad `%s`%s %s: %d commits on bad's first-parent line, bisected for a %s (%s).\n",
		r.Good.Short(), refText(r.Good), md(r.Good.Subject), r.Bad.Short(), refText(r.Bad), md(r.Bad.Subject), r.Commits, r.Direction, dir)

	fmt.Fprintf(&b, "\n## Endpoints\n\n%s after %s.\n\n", upperFirst(r.Endpoints.Outcome), plural(r.Endpoints.Rounds, "round"))
	b.WriteString("| clients | bad vs good | p (adjusted) | verdict |\n|--:|--:|--:|:--|\n")
	for _, c := range r.Endpoints.Cells {
		fmt.Fprintf(&b, "| %d | %s | %.3g | %s |\n", c.Clients, c.BadVsGood, c.BadVsGood.PAdjusted, c.BadVsGood.Verdict)
	}

	if len(r.Steps) > 0 {
		b.WriteString("\n## Steps\n\n")
		b.WriteString("| step | commit | subject | clients | vs good | vs bad | rounds | build | class |\n")
		b.WriteString("|--:|:--|:--|--:|--:|--:|--:|--:|:--|\n")
		for _, st := range r.Steps {
			build := buildText(st.Build)
			if len(st.Cells) == 0 {
				fmt.Fprintf(&b, "| %d | `%s` | %s | | | | | %s | %s |\n", st.N, st.Commit.Short(), md(st.Commit.Subject), build, st.Class)
			}
			for i, sc := range st.Cells {
				class := sc.Class
				if i == len(st.Cells)-1 {
					class = st.Class
				}
				fmt.Fprintf(&b, "| %d | `%s` | %s | %d | %s | %s | %d | %s | %s |\n",
					st.N, st.Commit.Short(), md(st.Commit.Subject), sc.Clients, sc.VsGood, sc.VsBad, st.Rounds, build, class)
			}
		}
		for _, st := range r.Steps {
			if st.Note != "" {
				fmt.Fprintf(&b, "\nStep %d (`%s`): %s.\n", st.N, st.Commit.Short(), md(st.Note))
			}
		}
	}
	if len(r.Range) > 0 {
		b.WriteString("\n## Suspects\n\n")
		for _, rc := range r.Range {
			fmt.Fprintf(&b, "- `%s` %s (%s)\n", rc.Hash, md(rc.Subject), rc.Status)
		}
	}

	fmt.Fprintf(&b, "\n## How each step was decided\n\n"+
		"Every commit ran in one campaign with good and bad, alternating; the deltas are its %s against theirs with the interval of "+
		"the paired t test on log ratios (%s), Holm-corrected across the comparisons of a look. A commit is bad when it is significantly "+
		"%s than good and its whole interval against bad lies within half the endpoints' change; good when it is significantly %s than "+
		"bad and its whole interval against good lies within that half; otherwise it gets another round, up to %d, and is skipped after "+
		"the last. Each look decides at alpha %g / %d = %.3g, so that looking again does not inflate the error rate.\n",
		report.MetricLabel(r.Workload.Metric), md(r.Method), slowerFaster(r.Direction, true), slowerFaster(r.Direction, false), r.StepRounds, r.Alpha, r.StepRounds, r.Alpha/float64(r.StepRounds))

	b.WriteString("\n## Workload\n\n")
	report.WriteWorkloadMarkdown(&b, r.Workload)

	b.WriteString("\n## Builds\n\n")
	fmt.Fprintf(&b, "- configure flags: %s\n", codeList(r.Build.ConfigureFlags))
	if r.Build.CFlags != "" {
		fmt.Fprintf(&b, "- CFLAGS: `%s`\n", report.MarkdownCode(r.Build.CFlags))
	}
	if len(r.Build.Patches) > 0 {
		fmt.Fprintf(&b, "- patches at every step: %s\n", codeList(r.Build.Patches))
	}
	fmt.Fprintf(&b, "- ccache: %v; builds in `%s`\n", r.Build.CCache, report.MarkdownCode(r.Build.Root))
	fmt.Fprintf(&b, "- good: %s; bad: %s\n", buildText(r.Endpoints.Good), buildText(r.Endpoints.Bad))
	if r.Build.Incremental {
		fmt.Fprintf(&b, "- incremental: %s\n", incrementalText(r))
	}

	b.WriteString("\n## Time\n\n")
	fmt.Fprintf(&b, "- total: %s; builds %s, measuring %s\n", report.HumanSeconds(r.WallSeconds), report.HumanSeconds(r.BuildSeconds), report.HumanSeconds(r.MeasureSeconds))
	fmt.Fprintf(&b, "- started %s, finished %s\n", r.StartedAt.UTC().Format(time.RFC3339), r.FinishedAt.UTC().Format(time.RFC3339))

	report.WriteClosingMarkdown(&b, r.Warnings, r.Command)
	_, err := io.WriteString(w, b.String())
	return err
}

// refText is " (REF)" when the commit was named by something other than
// its hash.
func refText(c Commit) string {
	if c.Ref == "" || strings.HasPrefix(c.Hash, c.Ref) {
		return ""
	}
	return " (" + report.MarkdownText(c.Ref) + ")"
}

// buildText is a build for the table: "94 s (ccache)", "reused", "failed".
func buildText(bl Build) string {
	switch {
	case bl.Error != "":
		return "failed"
	case bl.Cached:
		return "reused"
	case bl.Incremental:
		return fmt.Sprintf("%.0f s (incremental)", bl.Seconds)
	case bl.CCache:
		return fmt.Sprintf("%.0f s (ccache)", bl.Seconds)
	}
	return fmt.Sprintf("%.0f s", bl.Seconds)
}

// incrementalText compares the builds after the first (the endpoints' bad
// and the steps') with the first, good's.
func incrementalText(r *Result) string {
	first := r.Endpoints.Good
	var later []float64
	for _, bl := range append([]Build{r.Endpoints.Bad}, stepBuilds(r.Steps)...) {
		if !bl.Cached && bl.Error == "" && bl.BinDir != "" {
			later = append(later, bl.Seconds)
		}
	}
	text := "each commit built in one source tree, configured with `--enable-depend`"
	if first.Cached || first.Seconds <= 0 || len(later) == 0 {
		return text
	}
	if first.Incremental {
		// The tree held an earlier build: no build from the start to
		// compare with.
		return text + "; the tree held an earlier build, so the first build was incremental too"
	}
	mean := 0.0
	for _, s := range later {
		mean += s
	}
	mean /= float64(len(later))
	return fmt.Sprintf("%s; the first build %s, the %d after it %s on average (%.2f of the first)",
		text, report.HumanSeconds(first.Seconds), len(later), report.HumanSeconds(mean), mean/first.Seconds)
}

func stepBuilds(steps []Step) []Build {
	out := make([]Build, len(steps))
	for i, st := range steps {
		out[i] = st.Build
	}
	return out
}

func slowerFaster(direction string, bad bool) string {
	if (direction == DirectionImprovement) == bad {
		return "faster"
	}
	return "slower"
}

func codeList(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + report.MarkdownCode(s) + "`"
	}
	return strings.Join(out, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
