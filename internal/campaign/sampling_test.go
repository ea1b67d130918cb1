package campaign

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestSamplingRate(t *testing.T) {
	const minute = 60 * time.Second
	// The auto rate keeps a run at its estimated TPS within the bound,
	// with room for one up to logHeadroom times faster.
	for _, tps := range []float64{1_000, 100_000, 1_000_000} {
		r := samplingRate("auto", tps, minute, MaxLogLines)
		if !(r > 0 && r <= 1) {
			t.Fatalf("rate at %v tps = %v, want a fraction in (0, 1]", tps, r)
		}
		if lines := r * tps * 60; lines*logHeadroom > MaxLogLines*1.005 {
			t.Errorf("rate at %v tps = %v: %.0f lines a run, want at most %d / %d", tps, r, lines, MaxLogLines, logHeadroom)
		}
		if lines := r * tps * 60; r < 1 && lines*logHeadroom < MaxLogLines*0.995 {
			t.Errorf("rate at %v tps = %v: %.0f lines a run, want about %d / %d (no lower rate than needed)", tps, r, lines, MaxLogLines, logHeadroom)
		}
	}
	for _, tt := range []struct {
		name    string
		setting string
		tps     float64
		d       time.Duration
		max     int
		want    float64
	}{
		{"500 tps logs everything", "auto", 500, minute, MaxLogLines, 1},
		{"1k tps", "auto", 1_000, minute, MaxLogLines, 0.833},
		{"100k tps", "auto", 100_000, minute, MaxLogLines, 0.00833},
		{"1M tps", "auto", 1_000_000, minute, MaxLogLines, 0.000833},
		{"1M tps for an hour", "auto", 1_000_000, time.Hour, MaxLogLines, 1.39e-05},
		{"a test's bound", "auto", 20_000, 2 * time.Second, 400, 0.005},
		{"no estimate", "auto", 0, minute, MaxLogLines, FallbackSamplingRate},
		{"explicit", "0.25", 1_000_000, minute, MaxLogLines, 0.25},
		{"explicit all", "1", 1_000_000, minute, MaxLogLines, 1},
		{"explicit without estimate", "0.5", 0, minute, MaxLogLines, 0.5},
	} {
		if got := samplingRate(tt.setting, tt.tps, tt.d, tt.max); got != tt.want {
			t.Errorf("%s: samplingRate(%q, %v, %v, %d) = %v, want %v", tt.name, tt.setting, tt.tps, tt.d, tt.max, got, tt.want)
		}
	}
}

func TestLatestTPS(t *testing.T) {
	runs := map[int]report.Run{
		1: {Seq: 1, Clients: 1, TPS: 100},
		2: {Seq: 2, Clients: 4, TPS: 400},
		3: {Seq: 3, Clients: 1, TPS: 110},
		5: {Seq: 5, Clients: 4, TPS: 420},
		4: {Seq: 4, Clients: 4, TPS: 410},
	}
	for clients, want := range map[int]float64{1: 110, 4: 420, 16: 0} {
		if got := latestTPS(runs, clients); got != want {
			t.Errorf("latestTPS(runs, %d) = %v, want %v", clients, got, want)
		}
	}
	e := &engine{cfg: &Config{}, journal: &Journal{Runs: runs}}
	if got := e.expectedTPS(4); got != 420 {
		t.Errorf("expectedTPS(4) from the journal = %v, want 420", got)
	}
	// A later run of this process (a warm-up, say) wins over the journal.
	e.noteTPS(4, 380)
	e.noteTPS(4, 0)
	if got := e.expectedTPS(4); got != 380 {
		t.Errorf("expectedTPS(4) after a run at 380 = %v, want 380", got)
	}
}

// TestSampledRuns runs a short real campaign with a tiny log bound: the
// first run, with nothing to size it, logs at the fallback rate; each later
// one at the rate its predecessor's TPS gives, within the bound, and still
// reports percentiles and a TPS series of one value per second. The bound
// holds while each run's TPS is near its predecessor's: it runs alone
// (testhost.Quiet), where a loaded machine's TPS can double from one run to
// the next.
func TestSampledRuns(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	out := scratch(t)
	const bound = 400
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: 3 * time.Second, Iterations: 2,
		OutDir: out, Clone: true, LogLines: bound,
	}
	seedData(t, cfg, "a")
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	checkOrder(t, cfg, res.Runs)
	for i, r := range res.Runs {
		want := FallbackSamplingRate
		if i > 0 {
			want = samplingRate("auto", res.Runs[i-1].TPS, cfg.Duration, bound)
		}
		if r.SamplingRate != want || !(r.SamplingRate < 1) {
			t.Errorf("run %d sampling rate = %v, want %v (below 1)", r.Seq, r.SamplingRate, want)
		}
		dir := filepath.Join(out, r.LogDir)
		files, err := pgbench.LogFiles(dir, logPrefix)
		if err != nil {
			t.Fatalf("run %d: %v", r.Seq, err)
		}
		// Summarized, the logs are kept compressed.
		lines := 0
		for _, f := range files {
			if !strings.HasSuffix(f, ".gz") {
				t.Errorf("run %d log %s is not compressed", r.Seq, f)
			}
			lines += gzLines(t, f)
		}
		if i > 0 && lines > bound {
			t.Errorf("run %d wrote %d log lines at rate %v (%d transactions), want at most %d", r.Seq, lines, r.SamplingRate, r.Transactions, bound)
		}
		if r.LoggedTransactions < 1 || r.LoggedTransactions > int64(lines) {
			t.Errorf("run %d logged_transactions = %d, want between 1 and the %d lines", r.Seq, r.LoggedTransactions, lines)
		}
		l := r.LatencyMS
		if !(l.P50 > 0 && l.P50 <= l.P95 && l.P95 <= l.P99) {
			t.Errorf("run %d percentiles p50 %v p95 %v p99 %v, want positive and ordered", r.Seq, l.P50, l.P95, l.P99)
		}
		// One value per whole second the logs span: 2 or 3 for a 3 s
		// run, 1 when its transactions start late.
		if n := len(r.TPSSeries); n < 1 || n > 3 {
			t.Errorf("run %d TPS series = %v, want one value per whole second of 3 s", r.Seq, r.TPSSeries)
		}
		cmd, err := os.ReadFile(filepath.Join(dir, "command"))
		if err != nil || !strings.Contains(string(cmd), " --sampling-rate=") || strings.Contains(string(cmd), " -P ") {
			t.Errorf("run %d command = %q, %v, want --sampling-rate and no -P", r.Seq, cmd, err)
		}
		t.Logf("run %d: %.0f tps, rate %v, %d lines, %d logged, p99 %.3f ms, series %v", r.Seq, r.TPS, r.SamplingRate, lines, r.LoggedTransactions, l.P99, r.TPSSeries)
	}
}

// gzLines counts the lines of a gzip-compressed file.
func gzLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return bytes.Count(b, []byte("\n"))
}
