package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// ReadSource reads what one import takes from path: a history file
// (history.jsonl, history_version 1), a collected report directory (its
// results.json, the campaign id being the directory's name), or a
// directory holding a history.jsonl (pgbench-results). A malformed line
// is an error naming the file and its line.
func ReadSource(path string) ([]report.HistoryEntry, []CampaignRuns, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		entries, err := readHistoryFile(path)
		return entries, nil, err
	}
	results := filepath.Join(path, report.ResultsJSONFile)
	if _, err := os.Stat(results); err == nil {
		b, err := os.ReadFile(results)
		if err != nil {
			return nil, nil, err
		}
		res, err := report.DecodeResults(b, results)
		if err != nil {
			return nil, nil, err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, nil, err
		}
		id := filepath.Base(abs)
		return report.HistoryEntries(res, id, res.FinishedAt), []CampaignRuns{{Campaign: id, Runs: res.Runs}}, nil
	}
	hist := filepath.Join(path, report.HistoryFile)
	if _, err := os.Stat(hist); err == nil {
		entries, err := readHistoryFile(hist)
		return entries, nil, err
	}
	return nil, nil, fmt.Errorf("%s has neither %s (a collected report) nor %s", path, report.ResultsJSONFile, report.HistoryFile)
}

func readHistoryFile(path string) ([]report.HistoryEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := report.ReadHistory(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}

// Import writes what ReadSource reads from path in one transaction (all of
// it or, on any error, nothing) and returns how many comparisons were new.
// Importing a history file also clears the pending campaigns beside it:
// they are in the database now.
func (db *DB) Import(ctx context.Context, path string) (int64, error) {
	entries, runs, err := ReadSource(path)
	if err != nil {
		return 0, err
	}
	added, err := db.Write(ctx, entries, runs)
	if err != nil {
		return 0, fmt.Errorf("import %s: %w", path, err)
	}
	if hist := historyPath(path); hist != "" {
		ids := make([]string, 0, len(entries))
		for _, e := range entries {
			ids = append(ids, e.Campaign)
		}
		if err := report.ClearPending(hist, ids); err != nil {
			return added, err
		}
	}
	return added, nil
}

// historyPath is the history file an import of path read, or "".
func historyPath(path string) string {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return path
	}
	if _, err := os.Stat(filepath.Join(path, report.ResultsJSONFile)); err == nil {
		return ""
	}
	return filepath.Join(path, report.HistoryFile)
}

// PushPending writes the campaigns of the history at hist that are marked
// pending (report.MarkPending) and clears their mark; it returns the
// campaigns it pushed.
func (db *DB) PushPending(ctx context.Context, hist string) ([]string, error) {
	ids, err := report.Pending(hist)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	all, err := readHistoryFile(hist)
	if errors.Is(err, os.ErrNotExist) {
		return nil, report.ClearPending(hist, ids)
	}
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var entries []report.HistoryEntry
	for _, e := range all {
		if want[e.Campaign] {
			entries = append(entries, e)
		}
	}
	if _, err := db.Write(ctx, entries, nil); err != nil {
		return nil, err
	}
	return ids, report.ClearPending(hist, ids)
}
