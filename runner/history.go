package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
)

type historyCmd struct{}

func init() { register(historyCmd{}) }

func (historyCmd) Name() string { return "history" }
func (historyCmd) Synopsis() string {
	return "print the comparisons of past campaigns from a history file (pgbench-results/history.jsonl) or the results " +
		"database (--database), one table per baseline, candidate, client count and mode, oldest first; " +
		"`history import` writes history files and collected reports to the database, `history changes` finds the " +
		"change points of each series"
}

// historyActions are history's actions; with none, history prints the
// comparisons.
var historyActions = map[string]func(context.Context, []string) error{
	"import":  historyImport,
	"changes": historyChanges,
}

func (historyCmd) Actions() []string { return slices.Sorted(maps.Keys(historyActions)) }

func (c historyCmd) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		if action, ok := historyActions[args[0]]; ok {
			return action(ctx, args[1:])
		}
	}
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	database := databaseFlag(fs)
	baseline := fs.String("baseline", "", "only comparisons against this baseline variant")
	candidate := fs.String("candidate", "", "only comparisons of this candidate variant")
	clients := fs.Int("clients", 0, "only cells at this client count")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.Changed("clients") && *clients < 1 {
		return o.emit(nil, usagef("--clients %d: want a client count of at least 1", *clients), nil)
	}
	filter := resultsdb.Filter{Baseline: *baseline, Candidate: *candidate, Clients: *clients}
	entries, err := readEntries(ctx, fs, *database, filter)
	if err != nil {
		return o.emit(nil, err, nil)
	}
	return o.emit(entries, nil, func(w io.Writer) { report.WriteHistory(w, entries) })
}

// databaseFlag adds --database, whose default is $PGBENCH_HISTORY_DATABASE_URL.
func databaseFlag(fs *pflag.FlagSet) *string {
	return fs.String("database", "", "the results database, a postgres:// URL (default $"+resultsdb.EnvURL+
		"; prefer the variable, which other users of the host cannot read in the process list)")
}

// databaseURL is --database, else the environment's, else "".
func databaseURL(fs *pflag.FlagSet, flag string) string {
	if fs.Changed("database") {
		return flag
	}
	return os.Getenv(resultsdb.EnvURL)
}

// openDatabase opens the database at url; a URL that is not PostgreSQL's
// is a usage error.
func openDatabase(ctx context.Context, url string) (*resultsdb.DB, error) {
	if _, err := resultsdb.ParseURL(url); err != nil {
		return nil, usagef("--database: %v", err)
	}
	return resultsdb.Open(ctx, url)
}

// readEntries reads the entries matching filter from the one history file
// given as an argument, or, with none, from the database.
func readEntries(ctx context.Context, fs *pflag.FlagSet, database string, filter resultsdb.Filter) ([]report.HistoryEntry, error) {
	url := databaseURL(fs, database)
	switch {
	case fs.NArg() > 1 || (fs.NArg() == 1 && fs.Changed("database")):
		return nil, usagef("want one history file or --database, got %d arguments", fs.NArg())
	case fs.NArg() == 0 && url == "":
		return nil, usagef("want a history file (history FILE) or a results database (--database URL or $%s)", resultsdb.EnvURL)
	case fs.NArg() == 0:
		db, err := openDatabase(ctx, url)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		return db.Entries(ctx, filter)
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	defer f.Close()
	all, err := report.ReadHistory(f)
	if err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	entries := []report.HistoryEntry{}
	for _, e := range all {
		if (filter.Baseline == "" || e.Baseline.Name == filter.Baseline) &&
			(filter.Candidate == "" || e.Candidate.Name == filter.Candidate) &&
			(filter.Clients == 0 || e.Workload.Clients == filter.Clients) {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// importedSource is what `history import --json` reports per argument.
type importedSource struct {
	Path  string `json:"path"`
	Added int64  `json:"added"`
}

func historyImport(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet("history import", "write history files (history.jsonl, history_version 1), directories holding one, "+
		"and collected report directories (with results.json; the campaign id is the directory's name) to the results "+
		"database: each argument in one transaction, campaigns already there left as they are", &o)
	database := databaseFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	url := databaseURL(fs, *database)
	if url == "" {
		return o.emit(nil, usagef("want --database URL or $%s", resultsdb.EnvURL), nil)
	}
	if fs.NArg() == 0 {
		return o.emit(nil, usagef("want at least one history file or report directory (history import FILE_OR_DIR...)"), nil)
	}
	db, err := openDatabase(ctx, url)
	if err != nil {
		return o.emit(nil, err, nil)
	}
	defer db.Close()
	done := []importedSource{}
	for _, path := range fs.Args() {
		added, err := db.Import(ctx, path)
		if err != nil {
			return o.emit(nil, err, nil)
		}
		done = append(done, importedSource{Path: path, Added: added})
	}
	return o.emit(map[string]any{"imported": done}, nil, func(w io.Writer) {
		for _, d := range done {
			fmt.Fprintf(w, "%s: %d new comparisons in %s\n", d.Path, d.Added, db.Addr())
		}
	})
}

func historyChanges(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet("history changes", "find the change points of each series of comparisons (one host class, workload "+
		"and pair of variant names, in time order) in a history file or the results database (E-divisive means with a "+
		"permutation test on delta_pct)", &o)
	database := databaseFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	var points []report.SeriesPoint
	if fs.NArg() == 0 && databaseURL(fs, *database) != "" {
		db, err := openDatabase(ctx, databaseURL(fs, *database))
		if err != nil {
			return o.emit(nil, err, nil)
		}
		defer db.Close()
		if points, err = db.Points(ctx, resultsdb.Filter{}); err != nil {
			return o.emit(nil, err, nil)
		}
	} else {
		entries, err := readEntries(ctx, fs, *database, resultsdb.Filter{})
		if err != nil {
			return o.emit(nil, err, nil)
		}
		for _, e := range entries {
			points = append(points, e.Point())
		}
	}
	series := report.HistoryChanges(points)
	return o.emit(map[string]any{"series": series}, nil, func(w io.Writer) { report.WriteChanges(w, series) })
}
