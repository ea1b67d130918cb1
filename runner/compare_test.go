package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

func TestCompareSampleFiles(t *testing.T) {
	dir := t.TempDir()
	base := writeSamples(t, dir, "base.txt", "# stock\n100\n101\n99\n100.5\n99.7\n\n")
	cand := writeSamples(t, dir, "cand.txt", "103\n104.2\n101.9\n103.5\n102\n")
	code, out, errs := runCapture(t, "compare", "--baseline", base, "--candidate", cand, "--paired", "--json")
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0; stderr %s", code, errs)
	}
	var res report.SampleResults
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not the comparison document: %v\n%s", err, out)
	}
	if len(res.Comparisons) != 1 {
		t.Fatalf("comparisons = %+v, want one", res.Comparisons)
	}
	c := res.Comparisons[0]
	if c.Method != report.MethodPairedT || c.NBaseline != 5 || c.Verdict != report.VerdictFaster {
		t.Errorf("comparison = %+v, want paired, 5 pairs, faster", c)
	}
	// The geometric mean of the five ratios is +2.88%.
	if c.DeltaPct < 2.8 || c.DeltaPct > 2.95 || c.CILowPct == nil || *c.CILowPct <= 0 {
		t.Errorf("delta = %v%% [%v, %v], want about +2.88%% with an interval above 0", c.DeltaPct, c.CILowPct, c.CIHighPct)
	}
	// The same document fields as results.json's comparisons.
	for _, k := range []string{`"p_value"`, `"p_adjusted"`, `"ci_level"`, `"mde_pct"`, `"n_baseline"`} {
		if !strings.Contains(out, k) {
			t.Errorf("JSON has no %s:\n%s", k, out)
		}
	}
	code, out, _ = runCapture(t, "compare", "--baseline", base, "--candidate", cand)
	if code != exitOK || !strings.Contains(out, "hodges-lehmann") || !strings.Contains(out, "| samples | 5 / 5 |") {
		t.Errorf("unpaired text output (exit %d):\n%s", code, out)
	}
}

func TestCompareBenchstatFiles(t *testing.T) {
	dir := t.TempDir()
	// What pgbench-runner writes as <variant>.txt: configuration lines,
	// then one line per run and client count.
	head := "pgbench-mode: select-only\npgbench-scale: 10\n"
	var b, c strings.Builder
	b.WriteString(head)
	c.WriteString(head)
	for i, v := range []float64{1000, 1010, 990, 1005, 995, 1002} {
		b.WriteString("BenchmarkPgbench/mode=select-only/clients=1 1 " + ftoa(v) + " tps\n")
		b.WriteString("BenchmarkPgbench/mode=select-only/clients=8 1 " + ftoa(4*v) + " tps\n")
		c.WriteString("BenchmarkPgbench/mode=select-only/clients=1 1 " + ftoa(v+float64(i%2)) + " tps\n")
		c.WriteString("BenchmarkPgbench/mode=select-only/clients=8 1 " + ftoa(4.4*v) + " tps\n")
	}
	code, out, errs := runCapture(t, "compare", "--baseline", writeSamples(t, dir, "stock.txt", b.String()),
		"--candidate", writeSamples(t, dir, "patched.txt", c.String()), "--json")
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0; stderr %s", code, errs)
	}
	var res report.SampleResults
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Comparisons) != 2 {
		t.Fatalf("comparisons = %d, want one per benchmark name", len(res.Comparisons))
	}
	if got := res.Comparisons[1]; !strings.HasSuffix(got.Name, "clients=8") || got.Verdict != report.VerdictFaster {
		t.Errorf("clients=8 comparison = %+v, want faster", got)
	}
	if got := res.Comparisons[0]; got.Verdict != report.VerdictNoDifference {
		t.Errorf("clients=1 comparison = %+v, want no-difference", got)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeSamples(t, dir, "good.txt", "100\n101\n99\n102\n98\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty file", []string{"--baseline", writeSamples(t, dir, "empty.txt", ""), "--candidate", good}, "no samples"},
		{"comments only", []string{"--baseline", writeSamples(t, dir, "comments.txt", "# nothing\n\n"), "--candidate", good}, "no samples"},
		{"not a number", []string{"--baseline", writeSamples(t, dir, "word.txt", "100\nfast\n"), "--candidate", good}, `line 2: "fast" is not a number`},
		{"negative", []string{"--baseline", good, "--candidate", writeSamples(t, dir, "neg.txt", "100\n-3\n")}, `"-3" is not a positive TPS value`},
		{"unequal lengths paired", []string{"--baseline", good, "--candidate", writeSamples(t, dir, "four.txt", "1\n2\n3\n4\n"), "--paired"}, "5 baseline values and 4 candidate values"},
		{"too few pairs", []string{"--baseline", writeSamples(t, dir, "two.txt", "1\n2\n"), "--candidate", writeSamples(t, dir, "two2.txt", "1\n2\n"), "--paired"}, "needs at least 3"},
		{"too few unpaired", []string{"--baseline", good, "--candidate", writeSamples(t, dir, "three.txt", "1\n2\n3\n")}, "needs at least 4 of each"},
		{"missing file", []string{"--baseline", filepath.Join(dir, "nope.txt"), "--candidate", good}, "no such file"},
		{"candidate missing", []string{"--baseline", good}, "--baseline and --candidate go together"},
		{"both forms", []string{dir, "--baseline", good, "--candidate", good}, "not both"},
		{"neither", nil, "want one campaign directory"},
		{"bad alpha", []string{"--baseline", good, "--candidate", good, "--alpha", "2"}, "--alpha 2"},
		{"write without OUT", []string{"--baseline", good, "--candidate", good, "--write"}, "--write applies to a campaign directory"},
		{"paired with OUT", []string{dir, "--paired"}, "--paired applies to --baseline/--candidate"},
		{"mixed formats", []string{"--baseline", writeSamples(t, dir, "mixed.txt", "100\nBenchmarkX 1 100 tps\n"), "--candidate", good}, "mixed"},
		{"names differ", []string{"--baseline", writeSamples(t, dir, "x.txt", "BenchmarkX 1 100 tps\n"), "--candidate", writeSamples(t, dir, "y.txt", "BenchmarkY 1 100 tps\n")}, "BenchmarkX is in the baseline but not in the candidate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCapture(t, append([]string{"compare", "--json"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stdout %s)", code, exitUsage, out)
			}
			var doc struct {
				Error struct{ Message, Kind string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || !strings.Contains(doc.Error.Message, tt.want) || doc.Error.Kind != "usage" {
				t.Errorf("error document = %s (stderr %s), want a usage error containing %q", out, errs, tt.want)
			}
		})
	}
}
