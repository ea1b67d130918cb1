package report

import (
	"fmt"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// The pieces of summary.md that other reports (a bisect's) write the same
// way.

// MarkdownText keeps free text from breaking a Markdown line or table:
// one line, table separators escaped.
func MarkdownText(s string) string { return mdText(s) }

// MarkdownCode is MarkdownText for text inside backticks.
func MarkdownCode(s string) string { return mdCode(s) }

// HumanSeconds writes a duration for a reader: "95 s", "312 s (5.2 min)".
func HumanSeconds(s float64) string { return humanSeconds(s) }

// WriteWorkloadMarkdown writes the workload as the list summary.md has.
func WriteWorkloadMarkdown(b *strings.Builder, wl Workload) { writeWorkload(b, wl) }

// WriteClosingMarkdown writes the sections that end summary.md: the
// warnings, then the command that reproduces the measurement; each only
// when there is something to say.
func WriteClosingMarkdown(b *strings.Builder, warnings, command []string) {
	if len(warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, msg := range warnings {
			fmt.Fprintf(b, "- %s\n", mdText(msg))
		}
	}
	if len(command) > 0 {
		fmt.Fprintf(b, "\n## Reproduce\n\n```sh\n%s\n```\n", remote.QuoteArgs(command))
	}
}
