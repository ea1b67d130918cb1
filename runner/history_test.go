package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
)

// handHistory is a history as a person would write it: two campaigns of
// stock vs patched at 1 and 64 clients, the newer one first in the file.
const handHistory = `{"history_version":1,"recorded_at":"2026-12-02T09:00:00Z","campaign":"ab-0002","host":{"instance_type":"m7i.metal-48xl","cores":96,"numa_nodes":2},"workload":{"mode":"select-only","clients":64},"baseline":{"name":"stock","version":"postgres (PostgreSQL) 15.18"},"candidate":{"name":"patched","version":"postgres (PostgreSQL) 15.18"},"delta_pct":9.8,"ci_low_pct":8.1,"ci_high_pct":11.5,"verdict":"faster"}
{"history_version":1,"recorded_at":"2026-12-01T09:00:00Z","campaign":"ab-0001","host":{"cpu_model":"Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz","cores":2,"numa_nodes":1},"workload":{"mode":"select-only","clients":64},"baseline":{"name":"stock"},"candidate":{"name":"patched"},"delta_pct":0.4,"ci_low_pct":-1.2,"ci_high_pct":2.0,"verdict":"no-difference"}

{"history_version":1,"recorded_at":"2026-12-01T09:00:00Z","campaign":"ab-0001","host":{"cores":2},"workload":{"mode":"select-only","clients":1},"baseline":{"name":"stock"},"candidate":{"name":"patched"},"delta_pct":-3.1,"ci_low_pct":null,"ci_high_pct":null,"verdict":"no-difference"}
`

func TestHistoryHandWritten(t *testing.T) {
	path := writeSamples(t, t.TempDir(), "history.jsonl", handHistory)
	code, out, errs := runCapture(t, "history", path)
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0; stderr %s", code, errs)
	}
	for _, want := range []string{
		"## patched vs stock, select-only, 1 client\n",
		"## patched vs stock, select-only, 64 clients\n",
		"| 2026-12-01 09:00 | ab-0001 | Intel Xeon E5-2686 v4, 2 cores | 64 | stock → patched | +0.40% (-1.20% .. +2.00%) | no-difference |\n" +
			"| 2026-12-02 09:00 | ab-0002 | m7i.metal-48xl, 96 cores, 2 NUMA nodes | 64 | stock (15.18) → patched (15.18) | +9.80% (+8.10% .. +11.50%) | faster |\n",
		"| 1 | stock → patched | -3.10% | no-difference |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("history output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "1 client\n") > strings.Index(out, "64 clients\n") {
		t.Errorf("series out of order (1 client first):\n%s", out)
	}

	code, out, errs = runCapture(t, "history", path, "--clients", "64", "--candidate", "patched", "--json")
	if code != exitOK {
		t.Fatalf("--json exit code = %d, want 0; stderr %s", code, errs)
	}
	var got []report.HistoryEntry
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not a list of entries: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0].Campaign != "ab-0002" || got[1].Campaign != "ab-0001" || got[0].Workload.Clients != 64 {
		t.Errorf("filtered entries = %+v, want the two 64-client entries in file order", got)
	}

	code, out, _ = runCapture(t, "history", path, "--baseline", "nope", "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("no match: exit %d, stdout %q; want 0 and []", code, out)
	}
	code, out, _ = runCapture(t, "history", path, "--baseline", "nope")
	if code != exitOK || out != "no history entries\n" {
		t.Errorf("no match as text: exit %d, stdout %q", code, out)
	}
}

// Entries as the provider appends them after collecting a campaign, from
// the report package's results.json golden file.
func TestHistoryFromResults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "internal", "report", "testdata", "results.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.DecodeResults(b, "results.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pgbench-results", report.HistoryFile)
	for i, id := range []string{"ab-0001", "ab-0002"} {
		at := time.Date(2026, 12, 1+i, 9, 0, 0, 0, time.UTC)
		if err := report.AppendHistory(path, report.HistoryEntries(res, id, at)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCapture(t, "history", path)
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0; stderr %s", code, errs)
	}
	// Two candidates at three client counts: six series of two campaigns.
	if n := strings.Count(out, "\n## "); n != 5 || !strings.HasPrefix(out, "## hugepages vs stock, select-only, 1 client\n") {
		t.Errorf("want six series, hugepages at 1 client first:\n%s", out)
	}
	if !strings.Contains(out, "| 2026-12-02 09:00 | ab-0002 | Intel Xeon Platinum 8488C, 2 cores | 16 | stock (15.18) → patched (15.18) | +10.") {
		t.Errorf("no 16-client row of ab-0002 for patched:\n%s", out)
	}
	code, out, _ = runCapture(t, "history", path, "--candidate", "patched", "--clients", "16", "--json")
	var got []report.HistoryEntry
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || len(got) != 2 {
		t.Fatalf("--candidate patched --clients 16: exit %d, %d entries, %v; want 2\n%s", code, len(got), err, out)
	}
	for _, e := range got {
		if e.Verdict != report.VerdictFaster || e.Baseline.MedianTPS == 0 || e.Candidate.MedianTPS <= e.Baseline.MedianTPS {
			t.Errorf("entry %s: %s, medians %v -> %v; want faster with a higher candidate median", e.Campaign, e.Verdict, e.Baseline.MedianTPS, e.Candidate.MedianTPS)
		}
	}
}

func TestHistoryBadInput(t *testing.T) {
	t.Setenv(resultsdb.EnvURL, "")
	dir := t.TempDir()
	good := writeSamples(t, dir, "good.jsonl", handHistory)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "want a history file (history FILE) or a results database"},
		{"two files", []string{good, good}, "got 2 arguments"},
		{"missing file", []string{filepath.Join(dir, "nope.jsonl")}, "no such file"},
		{"malformed line", []string{writeSamples(t, dir, "bad.jsonl", handHistory+"{\"history_version\":1,\n")}, "history line 5:"},
		{"not history", []string{writeSamples(t, dir, "results.json", "{\n  \"schema_version\": 2\n}\n")}, "history line 1:"},
		{"unknown flag", []string{good, "--since", "yesterday"}, "unknown flag: --since"},
		{"bad clients", []string{good, "--clients", "0"}, "--clients 0"},
		{"clients not a number", []string{good, "--clients", "many"}, "invalid argument \"many\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCapture(t, append([]string{"history", "--json"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stdout %s)", code, exitUsage, out)
			}
			if !strings.Contains(out+errs, tt.want) {
				t.Errorf("stdout %s stderr %s, want an error containing %q", out, errs, tt.want)
			}
			code, _, errs = runCapture(t, append([]string{"history"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errs, tt.want) {
				t.Errorf("text mode: exit code %d, stderr %q; want %d and %q", code, errs, exitUsage, tt.want)
			}
		})
	}
}
