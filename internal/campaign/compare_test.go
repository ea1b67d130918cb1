package campaign

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// TestRecompute rebuilds a campaign's results from its journal at another
// alpha, keeping what only the measuring run knew.
func TestRecompute(t *testing.T) {
	dir := t.TempDir()
	def := Definition{
		Variants: []DefinitionVariant{{Name: "stock", BinDir: "/pg/bin", HugePages: "off"}, {Name: "patched", BinDir: "/pgp/bin", HugePages: "on"}},
		Mode:     "select-only", Scale: 10, Clients: []int{4}, Threads: "auto", DurationSeconds: 10, Iterations: 5,
		Protocol: "simple", Restart: "never", Order: OrderAlternate,
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	j, err := openJournal(dir, def, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	tps := map[string][]float64{"stock": {1000, 1010, 990, 1005, 995}, "patched": {1030, 1042, 1019, 1035, 1020}}
	seq := 0
	for it := 1; it <= 5; it++ {
		order := []string{"stock", "patched"}
		if it%2 == 0 {
			order = []string{"patched", "stock"}
		}
		for _, v := range order {
			seq++
			if err := j.Append(report.Run{Seq: seq, Variant: v, Clients: 4, Iteration: it, TPS: tps[v][it-1],
				StartedAt: t0.Add(time.Duration(seq) * 11 * time.Second), Seconds: 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.RecordHugePages("patched", "on"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	prev := map[string]any{
		"schema_version": 1,
		"finished_at":    t0.Add(2 * time.Minute),
		"wall_seconds":   120,
		"command":        []string{"pgbench-runner", "ab", "--out", dir},
		"variants":       []map[string]any{{"name": "stock", "version": "postgres (PostgreSQL) 15.18"}, {"name": "patched", "version": "postgres (PostgreSQL) 15.18+"}},
		"sysinfo":        map[string]any{"kernel": "6.1"},
		"warnings":       []string{"client and server share CPUs 0-1", "clients=4: stale statistics warning"},
	}
	b, _ := json.Marshal(prev)
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := Recompute(dir, 0.1, true)
	if err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	if res.Alpha != 0.1 || res.Method != report.MethodPairedT || len(res.Runs) != 10 || len(res.Cells) != 1 {
		t.Fatalf("results = alpha %v, method %s, %d runs, %d cells; want 0.1, paired, 10, 1", res.Alpha, res.Method, len(res.Runs), len(res.Cells))
	}
	if got := res.Variants[1]; got.Version != "postgres (PostgreSQL) 15.18+" || got.HugePagesObserved != "on" {
		t.Errorf("patched variant = %+v, want the version from results.json and huge pages observed on", got)
	}
	cmp := res.Cells[0].Comparisons[0]
	if cmp.Verdict != report.VerdictFaster || cmp.NBaseline != 5 {
		t.Errorf("comparison = %+v, want faster from 5 pairs", cmp)
	}
	joined := strings.Join(res.Warnings, "\n")
	if !strings.Contains(joined, "share CPUs") || strings.Contains(joined, "stale") {
		t.Errorf("warnings = %q, want the campaign's own kept and the old statistics' dropped", res.Warnings)
	}
	if res.WallSeconds != 120 || res.Sysinfo == nil || len(res.Command) == 0 {
		t.Errorf("wall %v, sysinfo %v, command %v: want them from the previous results", res.WallSeconds, res.Sysinfo, res.Command)
	}
	written, err := readResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatalf("results.json after --write: %v", err)
	}
	if written.Alpha != 0.1 || written.SchemaVersion != report.SchemaVersion {
		t.Errorf("results.json alpha %v schema %d, want 0.1 and %d", written.Alpha, written.SchemaVersion, report.SchemaVersion)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err != nil {
		t.Errorf("summary.md not written: %v", err)
	}

	if _, err := Recompute(t.TempDir(), 0.05, false); err == nil || !strings.Contains(err.Error(), "read journal") {
		t.Errorf("Recompute of a directory without a journal = %v, want a read journal error", err)
	}
}
