package main

import (
	"context"
	"io"
	"os"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

type historyCmd struct{}

func init() { register(historyCmd{}) }

func (historyCmd) Name() string { return "history" }
func (historyCmd) Synopsis() string {
	return "print the comparisons of past campaigns from a history file (pgbench-results/history.jsonl), " +
		"one table per baseline, candidate, client count and mode, oldest first"
}

func (c historyCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	baseline := fs.String("baseline", "", "only comparisons against this baseline variant")
	candidate := fs.String("candidate", "", "only comparisons of this candidate variant")
	clients := fs.Int("clients", 0, "only cells at this client count")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return o.emit(nil, usagef("want one history file (history FILE), got %d arguments", fs.NArg()), nil)
	}
	if fs.Changed("clients") && *clients < 1 {
		return o.emit(nil, usagef("--clients %d: want a client count of at least 1", *clients), nil)
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return o.emit(nil, usagef("%v", err), nil)
	}
	defer f.Close()
	all, err := report.ReadHistory(f)
	if err != nil {
		return o.emit(nil, usagef("%s: %v", path, err), nil)
	}
	entries := []report.HistoryEntry{}
	for _, e := range all {
		if (*baseline == "" || e.Baseline.Name == *baseline) &&
			(*candidate == "" || e.Candidate.Name == *candidate) &&
			(*clients == 0 || e.Workload.Clients == *clients) {
			entries = append(entries, e)
		}
	}
	return o.emit(entries, nil, func(w io.Writer) { report.WriteHistory(w, entries) })
}
