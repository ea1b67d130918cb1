package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb/resultsdbtest"
)

// TestHistoryDatabase: two nightly series of 30 nights (one with a step at
// night 18, one flat), imported twice and then by two writers at once, are
// read back once each, and `history changes` finds the step's night and
// nothing in the flat series.
func TestHistoryDatabase(t *testing.T) {
	url := resultsdbtest.Start(t)
	t.Setenv(resultsdb.EnvURL, "")
	step := resultsdbtest.WriteHistory(t, resultsdbtest.Nightly("step", 30, 64, 18, 6, 1))
	flat := resultsdbtest.WriteHistory(t, resultsdbtest.Nightly("flat", 30, 1, -1, 0, 2))
	for round, want := range []string{`"added": 30`, `"added": 0`} {
		code, out, errs := runCapture(t, "history", "import", "--database", url, "--json", step, flat)
		if code != exitOK || strings.Count(out, want) != 2 {
			t.Fatalf("import round %d: exit %d, stdout %s, stderr %s; want %s twice", round, code, out, errs, want)
		}
	}
	// Two writers at once (the output goes nowhere: run's writers are shared).
	defer func(o, e io.Writer) { stdout, stderr = o, e }(stdout, stderr)
	stdout, stderr = io.Discard, io.Discard
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = historyCmd{}.Run(context.Background(), []string{"import", "--database", url, flat, step})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent import: %v", err)
		}
	}

	// Through the environment, as a pipeline passes it.
	t.Setenv(resultsdb.EnvURL, url)
	code, out, errOut := runCapture(t, "history", "--json")
	var entries []report.HistoryEntry
	if err := json.Unmarshal([]byte(out), &entries); code != exitOK || err != nil {
		t.Fatalf("history --json: exit %d, %v; stdout %s stderr %s", code, err, out, errOut)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Campaign]++
	}
	if len(entries) != 60 || len(seen) != 60 {
		t.Fatalf("history --json gave %d entries of %d campaigns, want 60 of 60", len(entries), len(seen))
	}
	code, out, _ = runCapture(t, "history", "--clients", "64")
	if code != exitOK || strings.Count(out, "| step-") != 30 || strings.Contains(out, "flat-") {
		t.Errorf("history --clients 64: exit %d, want the 30 nights of the step series:\n%s", code, out)
	}

	code, out, errOut = runCapture(t, "history", "changes", "--database", url, "--json")
	var doc struct {
		Series []report.SeriesChanges `json:"series"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil {
		t.Fatalf("history changes --json: exit %d, %v; stdout %s stderr %s", code, err, out, errOut)
	}
	if len(doc.Series) != 2 {
		t.Fatalf("%d series, want 2:\n%s", len(doc.Series), out)
	}
	for _, s := range doc.Series {
		if s.Points != 30 {
			t.Errorf("series %+v has %d points, want 30", s.Key, s.Points)
		}
		if s.Key.Clients == 1 && len(s.Changes) != 0 {
			t.Errorf("flat series has changes: %+v", s.Changes)
		}
		if s.Key.Clients == 64 {
			if len(s.Changes) != 1 || s.Changes[0].Campaign != "step-018" || s.Changes[0].Index != 18 ||
				!s.Changes[0].RecordedAt.Equal(resultsdbtest.Night0.AddDate(0, 0, 18).Add(2*time.Hour)) {
				t.Errorf("step series changes = %+v, want one at step-018, night 18", s.Changes)
			}
		}
	}
	// The same from the file, as text.
	code, out, _ = runCapture(t, "history", "changes", step)
	if code != exitOK || !strings.Contains(out, "campaign step-018 (point 18)") {
		t.Errorf("history changes FILE: exit %d, want the change at step-018:\n%s", code, out)
	}
}

// TestHistoryDatabaseUnreachable: a clear error naming host and port, a
// non-zero exit within a minute, and never the password.
func TestHistoryDatabaseUnreachable(t *testing.T) {
	port, err := resultsdbtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://bench:%s@127.0.0.1:%d/results", resultsdbtest.Password, port)
	file := resultsdbtest.WriteHistory(t, resultsdbtest.Nightly("n", 3, 1, -1, 0, 1))
	for _, args := range [][]string{
		{"history", "--database", url},
		{"history", "--database", url, "--json"},
		{"history", "changes", "--database", url, "--json"},
		{"history", "import", "--database", url, file},
	} {
		start := time.Now()
		code, out, errs := runCapture(t, args...)
		if code == exitOK || time.Since(start) > time.Minute {
			t.Errorf("%v: exit %d after %v, want a failure within a minute", args[:2], code, time.Since(start))
		}
		if !strings.Contains(out+errs, fmt.Sprintf("127.0.0.1:%d", port)) || strings.Contains(out+errs, resultsdbtest.Password) {
			t.Errorf("%v: stdout %q stderr %q: want host and port, never the password", args[:2], out, errs)
		}
	}
	code, _, errs := runCapture(t, "history", "--database", "mysql://u:"+resultsdbtest.Password+"@h/db")
	if code != exitUsage || !strings.Contains(errs, "not a PostgreSQL URL") || strings.Contains(errs, resultsdbtest.Password) {
		t.Errorf("mysql URL: exit %d, stderr %q; want a usage error without the password", code, errs)
	}
}
