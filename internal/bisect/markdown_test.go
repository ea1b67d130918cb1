package bisect

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func pctp(f float64) *float64 { return &f }

// goldenResult is a finished bisect of six commits: the endpoints, a
// commit that did not build, a good one and a bad one.
func goldenResult() *Result {
	at := func(min int) time.Time { return time.Date(2025, 2, 20, 12, min, 0, 0, time.UTC) }
	c := func(h string, min int, subject string) Commit {
		return Commit{Hash: strings.Repeat(h, 40), Subject: subject, AuthorDate: at(min)}
	}
	d := func(pct, lo, hi, p float64, verdict string) Delta {
		return Delta{DeltaPct: pct, CILowPct: pctp(lo), CIHighPct: pctp(hi), CILevel: 0.99, PAdjusted: p, Verdict: verdict, Pairs: 3}
	}
	slow := c("4", 4, "Spin in standard_ExecutorStart before every query")
	good, bad := c("0", 0, "PostgreSQL 15.18"), c("6", 6, "Fix the comment of int2vectorrecv")
	good.Ref, bad.Ref = "REL_15_18", "master"
	wl := report.Workload{Mode: "select-only", Scale: 1, Clients: []int{1}, Threads: "auto", DurationSeconds: 3, Iterations: 3,
		Protocol: "simple", WarmupSeconds: 1, Restart: "never", Order: "alternate"}
	return &Result{
		SchemaVersion: SchemaVersion, Outcome: OutcomeFirstBad, FirstBad: &slow,
		Answer: `first bad commit: 4444444444444444444444444444444444444444 "Spin in standard_ExecutorStart before every query" (authored 2025-02-20T12:04:00Z)`,
		GitURL: "/srv/postgresql", Direction: DirectionRegression, Good: good, Bad: bad, Commits: 6,
		Endpoints: Endpoints{Outcome: EndpointsConfirmed, Rounds: 1, Dir: "endpoints", MeasureSeconds: 41, Workload: wl,
			Cells: []EndpointCell{{Clients: 1, BadVsGood: d(-71.2, -73.0, -69.3, 0.0004, report.VerdictSlower)}},
			Good:  Build{Seconds: 219, CCache: true, BinDir: "/b/1/bin"}, Bad: Build{Seconds: 95, CCache: true, BinDir: "/b/2/bin"}},
		Steps: []Step{
			{N: 1, Position: 3, Commit: c("3", 3, "pgbench: reword the help of --select-only"), Class: ClassBuildFailed,
				Cells: []StepCell{}, Build: Build{Error: "make failed: make -j2 exited with status 2"}, Note: "does not build: make failed"},
			{N: 2, Position: 4, Commit: slow, Class: ClassBad, Rounds: 1, MeasureSeconds: 62, Build: Build{Seconds: 91, CCache: true},
				Cells: []StepCell{{Clients: 1, VsGood: d(-70.9, -72.5, -69.1, 0.0003, report.VerdictSlower), VsBad: d(1.1, -2.0, 4.3, 0.4, report.VerdictNoDifference), Class: ClassBad}}},
			{N: 3, Position: 2, Commit: c("2", 2, "Say why | standard_ExecutorStart checks"), Class: ClassGood, Rounds: 2, MeasureSeconds: 120, Build: Build{Cached: true},
				Cells: []StepCell{{Clients: 1, VsGood: d(0.4, -1.5, 2.4, 0.6, report.VerdictNoDifference), VsBad: d(246.0, 231.2, 261.5, 0.0001, report.VerdictFaster), Class: ClassGood}}},
		},
		Workload: wl, Build: BuildSettings{ConfigureFlags: []string{"--without-readline", "--without-icu"}, Patches: []string{}, CCache: true, Root: "/b"},
		Alpha: 0.05, StepRounds: 3, Method: report.MethodPairedT,
		StartedAt: at(30), FinishedAt: at(42), WallSeconds: 720, BuildSeconds: 405, MeasureSeconds: 223,
		Command:  []string{"pgbench-runner", "bisect", "--git", "/srv/postgresql", "--good", "REL_15_18", "--bad", "master", "--out", "/srv/b"},
		Warnings: []string{"build 3333333333: make failed"},
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b strings.Builder
	if err := WriteMarkdown(&b, goldenResult()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.md.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("summary.md differs from %s (run with -update after checking):\n%s", golden, got)
	}
}

// A bisect under TPC-C decides on NOPM, and its summary says so.
func TestWriteMarkdownNamesTheMetric(t *testing.T) {
	r := goldenResult()
	r.Workload.Mode, r.Workload.Warehouses, r.Workload.Metric = "tpcc", 4, report.MetricNOPM
	var b strings.Builder
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "the deltas are its NOPM against theirs") || strings.Contains(s, "TPS against") {
		t.Errorf("the summary of a TPC-C bisect does not say its deltas are of NOPM:\n%s", s)
	}
}
