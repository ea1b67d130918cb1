package resultsdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb/resultsdbtest"
)

func open(t testing.TB, url string) *resultsdb.DB {
	t.Helper()
	db, err := resultsdb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestImportTwiceAndTwoWriters: two nightly series imported twice, then by
// two writers at once, are stored once each, and read back as written.
func TestImportTwiceAndTwoWriters(t *testing.T) {
	url := resultsdbtest.Database(t)
	ctx := context.Background()
	step := resultsdbtest.Nightly("step", 30, 64, 18, 6, 1)
	flat := resultsdbtest.Nightly("flat", 30, 1, -1, 0, 2)
	stepFile := resultsdbtest.WriteHistory(t, step)
	flatFile := resultsdbtest.WriteHistory(t, flat)

	db := open(t, url)
	for round, want := range []int64{30, 0} {
		for _, f := range []string{stepFile, flatFile} {
			added, err := db.Import(ctx, f)
			if err != nil {
				t.Fatalf("import %s: %v", f, err)
			}
			if added != want {
				t.Errorf("round %d: import %s added %d, want %d", round, f, added, want)
			}
		}
	}
	// Two writers at once, each with both files, on a fresh database.
	if _, err := db.Exec(ctx, `TRUNCATE pgbench_runs, pgbench_comparisons, pgbench_campaigns`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wdb, err := resultsdb.Open(ctx, url)
			if err != nil {
				errs[w] = err
				return
			}
			defer wdb.Close()
			for _, f := range []string{stepFile, flatFile} {
				if _, err := wdb.Import(ctx, f); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("two writers: %v", err)
	}
	got, err := db.Entries(ctx, resultsdb.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 60 {
		t.Fatalf("%d entries read back, want 60", len(got))
	}
	seen := map[string]int{}
	for _, e := range got {
		seen[e.Campaign]++
	}
	for _, e := range slices.Concat(step, flat) {
		if seen[e.Campaign] != 1 {
			t.Errorf("campaign %s stored %d times, want once", e.Campaign, seen[e.Campaign])
		}
	}
	// As written: the first night of the step series, field by field.
	one, err := db.Entries(ctx, resultsdb.Filter{Clients: 64})
	if err != nil {
		t.Fatal(err)
	}
	a := jsonOf(one[0])
	if b := jsonOf(step[0]); a != b {
		t.Errorf("entry read back differs:\n got %s\nwant %s", a, b)
	}
	if len(one) != 30 {
		t.Errorf("--clients 64 gave %d entries, want 30", len(one))
	}
}

// TestChangesFromDatabase: the change points of what is in the database
// are the step's night and nothing in the flat series.
func TestChangesFromDatabase(t *testing.T) {
	db := open(t, resultsdbtest.Database(t))
	ctx := context.Background()
	entries := slices.Concat(resultsdbtest.Nightly("step", 30, 64, 18, 6, 1), resultsdbtest.Nightly("flat", 30, 1, -1, 0, 2))
	if _, err := db.Write(ctx, entries, nil); err != nil {
		t.Fatal(err)
	}
	points, err := db.Points(ctx, resultsdb.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	fromDB := report.HistoryChanges(points)
	var filePoints []report.SeriesPoint
	for _, e := range entries {
		filePoints = append(filePoints, e.Point())
	}
	if a, b := jsonOf(fromDB), jsonOf(report.HistoryChanges(filePoints)); a != b {
		t.Fatalf("changes from the database differ from the file's:\n%s\n%s", a, b)
	}
	if len(fromDB) != 2 {
		t.Fatalf("%d series, want 2", len(fromDB))
	}
	for _, s := range fromDB {
		switch s.Key.Clients {
		case 1:
			if len(s.Changes) != 0 {
				t.Errorf("flat series has changes %+v", s.Changes)
			}
		case 64:
			if len(s.Changes) != 1 || s.Changes[0].Campaign != "step-018" || s.Changes[0].Index != 18 {
				t.Errorf("step series changes = %+v, want one at step-018 (index 18)", s.Changes)
			}
		}
	}
}

// TestNewerSchemaRefused names both versions.
func TestNewerSchemaRefused(t *testing.T) {
	url := resultsdbtest.Database(t)
	db := open(t, url)
	if _, err := db.Exec(context.Background(), `INSERT INTO pgbench_schema_version (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	_, err := resultsdb.Open(context.Background(), url)
	var ne *resultsdb.NewerSchemaError
	if !errors.As(err, &ne) || ne.Database != 99 || ne.Binary != resultsdb.SchemaVersion {
		t.Fatalf("open = %v, want a NewerSchemaError 99 > %d", err, resultsdb.SchemaVersion)
	}
	for _, want := range []string{"version 99", fmt.Sprintf("version %d", resultsdb.SchemaVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestUnreachable: a database nothing listens at is an error naming host
// and port, soon, without the password.
func TestUnreachable(t *testing.T) {
	port, err := resultsdbtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://bench:%s@127.0.0.1:%d/results", resultsdbtest.Password, port)
	start := time.Now()
	_, err = resultsdb.Open(context.Background(), url)
	if err == nil {
		t.Fatal("open of a closed port succeeded")
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v, want under a minute", d)
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d", port)) || strings.Contains(msg, resultsdbtest.Password) {
		t.Errorf("error %q: want host and port, never the password", msg)
	}
	var ue *resultsdb.UnreachableError
	if !errors.As(err, &ue) {
		t.Errorf("error %T is not an UnreachableError", err)
	}
}

func TestParseURL(t *testing.T) {
	for _, bad := range []string{"", "mysql://u:p@h/db", "host=h user=u", "http://h:5432/db", "postgres://u:p@h:notaport/db"} {
		if _, err := resultsdb.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		} else if strings.Contains(err.Error(), ":p@") {
			t.Errorf("ParseURL(%q) error %q shows the password", bad, err)
		}
	}
	cfg, err := resultsdb.ParseURL("postgresql://u:p@db.example:6543/results")
	if err != nil || resultsdb.Address(cfg) != "db.example:6543" || cfg.ConnectTimeout != resultsdb.DefaultConnectTimeout {
		t.Errorf("ParseURL = %v, %v", cfg, err)
	}
}

// TestMalformedLineWritesNothing: a file with a bad line is refused with
// its name and line number, and none of its good lines are written.
func TestMalformedLineWritesNothing(t *testing.T) {
	db := open(t, resultsdbtest.Database(t))
	path := resultsdbtest.WriteHistory(t, resultsdbtest.Nightly("bad", 5, 8, -1, 0, 3))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"history_version\":1,\"campaign\":\n")
	f.Close()
	_, err = db.Import(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("import = %v, want an error naming %s line 6", err, path)
	}
	got, err := db.Entries(context.Background(), resultsdb.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("%d entries written from a refused file, want none", len(got))
	}
}

// TestPendingPushed: campaigns marked pending beside a history are pushed
// by PushPending and no longer pending; others in the file are not pushed.
func TestPendingPushed(t *testing.T) {
	db := open(t, resultsdbtest.Database(t))
	ctx := context.Background()
	path := resultsdbtest.WriteHistory(t, resultsdbtest.Nightly("p", 4, 8, -1, 0, 4))
	if err := report.MarkPending(path, []string{"p-001", "p-003"}); err != nil {
		t.Fatal(err)
	}
	pushed, err := db.PushPending(ctx, path)
	if err != nil || !slices.Equal(pushed, []string{"p-001", "p-003"}) {
		t.Fatalf("PushPending = %v, %v; want p-001 and p-003", pushed, err)
	}
	if left, err := report.Pending(path); err != nil || len(left) != 0 {
		t.Fatalf("still pending: %v, %v", left, err)
	}
	got, err := db.Entries(ctx, resultsdb.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.Campaign)
	}
	if !slices.Equal(ids, []string{"p-001", "p-003"}) {
		t.Fatalf("database holds %v, want p-001 and p-003", ids)
	}
	if pushed, err := db.PushPending(ctx, path); err != nil || len(pushed) != 0 {
		t.Fatalf("second PushPending = %v, %v; want nothing to do", pushed, err)
	}
}

// TestImportReportDirectory: a collected report directory gives its
// comparisons and its runs, under the directory's name.
func TestImportReportDirectory(t *testing.T) {
	db := open(t, resultsdbtest.Database(t))
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ab-7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, report.ResultsJSONFile), []byte(resultsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	added, err := db.Import(ctx, dir)
	if err != nil || added != 1 {
		t.Fatalf("import = %d, %v; want 1 comparison", added, err)
	}
	var runs int
	var tps float64
	if err := db.QueryRow(ctx, `SELECT count(*), sum(tps) FROM pgbench_runs WHERE campaign = 'ab-7'`).Scan(&runs, &tps); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || tps != 2100 {
		t.Fatalf("runs: %d with %v TPS in all, want 2 with 2100", runs, tps)
	}
}

const resultsJSON = `{"schema_version": 2, "started_at": "2026-12-01T01:00:00Z", "finished_at": "2026-12-01T02:00:00Z",
 "variants": [{"name": "a", "bin_dir": "/a"}, {"name": "b", "bin_dir": "/b"}],
 "workload": {"mode": "select-only", "scale": 10, "clients": [4], "duration_seconds": 30, "protocol": "simple"},
 "alpha": 0.05,
 "cells": [{"clients": 4, "variants": {"a": {"median_tps": 1000}, "b": {"median_tps": 1100}},
   "comparisons": [{"baseline": "a", "candidate": "b", "method": "paired", "n_baseline": 1, "n_candidate": 1, "delta_pct": 10, "verdict": "faster"}]}],
 "runs": [{"seq": 1, "variant": "a", "clients": 4, "iteration": 1, "tps": 1000, "sampling_rate": 1},
          {"seq": 2, "variant": "b", "clients": 4, "iteration": 1, "tps": 1100, "sampling_rate": 1}]}`

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestMain(m *testing.M) { os.Exit(resultsdbtest.Main(m)) }

// BenchmarkImport100k is the import target: 100,000 history entries (a
// year of nightly campaigns comparing at a few client counts, one file)
// into a new database under 30 s.
func BenchmarkImport100k(b *testing.B) {
	var entries []report.HistoryEntry
	for s := range 274 {
		// 274 series of 365 nights: 100,010 entries, campaigns of 1 cell.
		entries = append(entries, resultsdbtest.Nightly(fmt.Sprintf("s%03d", s), 365, 1+s%8, -1, 0, uint64(s))...)
	}
	entries = entries[:100000]
	path := resultsdbtest.WriteHistory(b, entries)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		db := open(b, resultsdbtest.Database(b))
		b.StartTimer()
		added, err := db.Import(ctx, path)
		if err != nil || added != int64(len(entries)) {
			b.Fatalf("import = %d, %v; want %d", added, err, len(entries))
		}
	}
}
