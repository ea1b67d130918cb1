package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// ResultsFile is the name of the results document inside a campaign
// directory.
const ResultsFile = "results.json"

// summarize turns a campaign's runs into results: the workload from its
// definition, and the statistics of report.Summarize with the analysis its
// order calls for. The caller adds what only a measuring run knows (times,
// the command, host facts, its own warnings).
func summarize(def Definition, variants []report.Variant, runs []report.Run, alpha float64) (*report.Results, error) {
	sort.Slice(runs, func(i, j int) bool { return runs[i].Seq < runs[j].Seq })
	an := report.AnalysisFor(def.Order, alpha)
	an.Metric = def.metric()
	if def.IterationsAuto {
		an.FirstStage = def.MinIterations
	}
	// The extra profiled runs of one-per-cell ran slower under perf: they
	// are kept, not counted. When every run is profiled all count alike.
	measured := runs
	if def.Profile == ProfileOnePerCell {
		measured = nil
		for _, r := range runs {
			if !r.Profiled {
				measured = append(measured, r)
			}
		}
	}
	cells, warns, err := report.Summarize(variants, def.Clients, measured, an)
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	drifting := 0
	for _, r := range runs {
		if r.Drift {
			drifting++
		}
	}
	if drifting > 0 {
		warns = append(warns, fmt.Sprintf("%d of %d runs drifted during the run: a trend of at least %.0f%% over the run, significant against its own per-second noise (p < %g)",
			drifting, len(runs), pgbench.DriftMinPct, pgbench.DriftAlpha))
	}
	return &report.Results{
		SchemaVersion: report.SchemaVersion,
		Variants:      variants,
		Workload: report.Workload{
			Mode: def.Mode, Script: def.Script, Scale: def.Scale, Warehouses: def.Warehouses, Metric: def.metric(), Clients: def.Clients, Threads: def.Threads,
			DurationSeconds: def.DurationSeconds, Iterations: def.Iterations, IterationsAuto: def.IterationsAuto,
			TargetCIPct: def.TargetCIPct, MinIterations: def.MinIterations, MaxIterations: def.MaxIterations, Protocol: def.Protocol,
			WarmupSeconds: def.WarmupSeconds, CheckpointBefore: def.CheckpointBefore, Restart: def.Restart,
			Order: def.Order, Seed: def.Seed, ServerNUMA: def.ServerNUMA, ClientNUMA: def.ClientNUMA,
			Profile: def.Profile,
		},
		Alpha:      alpha,
		Method:     an.Method(),
		Correction: an.CorrectionName(),
		Cells:      cells,
		Runs:       runs,
		Warnings:   warns,
	}, nil
}

// Recompute rebuilds the results of the campaign in dir from its journal,
// without measuring anything: the same runs with the statistics of this
// version at alpha. What the journal does not hold (variant versions, host
// facts, the command, the campaign's own warnings) comes from the
// campaign's previous results.json when there is one, whatever its schema
// version. With write, results.json and every report are written again.
func Recompute(dir string, alpha float64, write bool) (*report.Results, error) {
	path := filepath.Join(dir, JournalFile)
	h, j, err := readJournal(dir)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("read journal: %s is missing or empty", path)
	}
	byseq, hp := j.Runs, j.HugePages
	if len(byseq) == 0 {
		return nil, fmt.Errorf("journal %s has no finished runs", path)
	}
	prev, err := previousResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	known := map[string]report.Variant{}
	for _, v := range prev.Variants {
		known[v.Name] = v
	}
	var variants []report.Variant
	for _, dv := range h.Definition.Variants {
		v, ok := known[dv.Name]
		if !ok {
			v = report.Variant{Name: dv.Name, BinDir: dv.BinDir, Settings: dv.Settings, HugePages: dv.HugePages, HugePagesObserved: "unknown"}
		}
		if obs, ok := hp[dv.Name]; ok {
			v.HugePagesObserved = obs
		}
		variants = append(variants, v)
	}
	runs := make([]report.Run, 0, len(byseq))
	for _, r := range byseq {
		runs = append(runs, r)
	}
	res, err := summarize(h.Definition, variants, runs, alpha)
	if err != nil {
		return nil, err
	}
	reportReplacements(res, j.Replaced)
	res.StartedAt = h.StartedAt
	res.FinishedAt, res.WallSeconds = prev.FinishedAt, prev.WallSeconds
	if res.FinishedAt.IsZero() {
		last := runs[len(runs)-1]
		res.FinishedAt = last.StartedAt.Add(time.Duration(last.Seconds * float64(time.Second)))
		res.WallSeconds = res.FinishedAt.Sub(res.StartedAt).Seconds()
	}
	res.Command = prev.Command
	res.Sysinfo = prev.Sysinfo
	res.Workload.Unwind = prev.Workload.Unwind
	if err := attachProfiles(context.Background(), dir, res); err != nil {
		return nil, err
	}
	// The campaign's own warnings (shared CPUs, a server without huge
	// pages) stay; those of the statistics are computed again.
	var kept []string
	for _, w := range prev.Warnings {
		if !strings.HasPrefix(w, "clients=") && !strings.Contains(w, "runs drifted during the run") {
			kept = append(kept, w)
		}
	}
	res.Warnings = append(kept, res.Warnings...)
	if write {
		if err := report.WriteAll(dir, res); err != nil {
			return nil, fmt.Errorf("write reports: %w", err)
		}
	}
	return res, nil
}

// previousResults reads the parts of an earlier results.json that the
// journal lacks. A missing file gives empty results.
func previousResults(path string) (*report.Results, error) {
	var prev report.Results
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &prev, nil
	case err != nil:
		return nil, fmt.Errorf("read previous results: %w", err)
	}
	if err := json.Unmarshal(b, &prev); err != nil {
		return nil, fmt.Errorf("decode previous results %s: %w", path, err)
	}
	return &prev, nil
}
