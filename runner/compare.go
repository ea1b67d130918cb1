package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

type compareCmd struct{}

func init() { register(compareCmd{}) }

func (compareCmd) Name() string { return "compare" }
func (compareCmd) Synopsis() string {
	return "recompute A/B statistics without measuring: `compare OUT` from a campaign's journal, " +
		"or `compare --baseline FILE --candidate FILE` for TPS samples from anywhere"
}

func (c compareCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	alpha := fs.Float64("alpha", 0.05, "family-wise significance level of the verdicts")
	write := fs.Bool("write", false, "with OUT: write results.json, results.csv, summary.md, the benchstat files and the chart again")
	baseline := fs.String("baseline", "", "file of baseline TPS samples: one value per line, or benchstat's format")
	candidate := fs.String("candidate", "", "file of candidate TPS samples, in the same format")
	paired := fs.Bool("paired", false, "with --baseline/--candidate: pair the samples by line order (runs made in alternating pairs)")
	correction := fs.String("correction", report.CorrectionHolm, "correction across comparisons: holm or none")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !(*alpha > 0 && *alpha <= 0.5) {
		return o.emit(nil, usagef("--alpha %v: want more than 0 and at most 0.5", *alpha), nil)
	}
	if *correction != report.CorrectionHolm && *correction != report.CorrectionNone {
		return o.emit(nil, usagef("--correction %q: want holm or none", *correction), nil)
	}
	files := *baseline != "" || *candidate != ""
	switch {
	case files && fs.NArg() > 0:
		return o.emit(nil, usagef("give either a campaign directory or --baseline and --candidate, not both"), nil)
	case files && (*baseline == "" || *candidate == ""):
		return o.emit(nil, usagef("--baseline and --candidate go together"), nil)
	case !files && fs.NArg() != 1:
		return o.emit(nil, usagef("want one campaign directory (compare OUT), or --baseline FILE --candidate FILE"), nil)
	case files && *write:
		return o.emit(nil, usagef("--write applies to a campaign directory"), nil)
	case !files && fs.Changed("paired"):
		return o.emit(nil, usagef("--paired applies to --baseline/--candidate: a campaign's order decides its pairing"), nil)
	case !files && fs.Changed("correction"):
		return o.emit(nil, usagef("--correction applies to --baseline/--candidate: a campaign is always corrected by Holm's method"), nil)
	}

	if !files {
		dir := fs.Arg(0)
		res, err := campaign.Recompute(dir, *alpha, *write)
		return o.emit(res, err, func(w io.Writer) {
			report.WriteMarkdown(w, res)
			if *write {
				fmt.Fprintf(w, "\nreports written again in %s\n", dir)
			}
		})
	}

	read := func(flag, path string) (*report.Samples, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, usagef("--%s: %v", flag, err)
		}
		defer f.Close()
		s, err := report.ParseSamples(f)
		if err != nil {
			return nil, usagef("--%s %s: %v", flag, path, err)
		}
		return s, nil
	}
	b, err := read("baseline", *baseline)
	if err != nil {
		return o.emit(nil, err, nil)
	}
	cand, err := read("candidate", *candidate)
	if err != nil {
		return o.emit(nil, err, nil)
	}
	res, err := report.CompareSamples(b, cand, report.Analysis{Alpha: *alpha, Paired: *paired, Correction: *correction})
	if err != nil {
		return o.emit(nil, usagef("%v", err), nil)
	}
	return o.emit(res, nil, func(w io.Writer) { report.WriteSampleComparisons(w, res) })
}
