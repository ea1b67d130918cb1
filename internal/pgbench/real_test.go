package pgbench

import (
	"context"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pg15 = "/usr/lib/postgresql/15/bin"

// TestRealPgbench runs PostgreSQL 15's pgbench against a scratch cluster
// and checks that its summary, its per-transaction log (whole and sampled)
// and its progress lines tell the same story.
func TestRealPgbench(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", pg15)
	testhost.RequireCommand(t, "pgbench", pg15)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c, cleanup, err := pgctl.Scratch(ctx, pg15, map[string]string{"fsync": "off", "huge_pages": "off"})
	if err != nil {
		t.Fatalf("Scratch: %v", err)
	}
	t.Cleanup(cleanup)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })

	// pgbench runs as the postgres user, so its log directory must be its own.
	logDir := filepath.Join(filepath.Dir(c.DataDir), "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup(pgctl.DefaultUser)
	if err != nil {
		t.Fatalf("look up %s: %v", pgctl.DefaultUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(logDir, uid, gid); err != nil {
		t.Fatal(err)
	}

	conn := []string{"-h", c.DataDir, "-U", "postgres", "postgres"}
	run := func(args ...string) string {
		t.Helper()
		res, err := c.Run(ctx, c.Command(nil, "pgbench", append(args, conn...)...))
		out := string(res.Stdout) + string(res.Stderr)
		if err != nil {
			t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run(InitArgs(1)...)

	o := RunOptions{Mode: ModeSelectOnly, Clients: 2, Threads: 2, Duration: 2 * time.Second, LogPrefix: filepath.Join(logDir, "tx")}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	text := run(o.Args()...)
	out, err := ParseOutput(text)
	if err != nil {
		t.Fatalf("ParseOutput: %v\n%s", err, text)
	}
	if !strings.HasPrefix(out.Version, "15.") || out.Clients != 2 || out.Threads != 2 || out.DurationSeconds != 2 {
		t.Errorf("version, clients, threads, duration = %q, %d, %d, %v, want 15.x, 2, 2, 2", out.Version, out.Clients, out.Threads, out.DurationSeconds)
	}
	if out.Transactions <= 0 || out.TPS <= 0 {
		t.Fatalf("transactions, tps = %d, %v, want positive\n%s", out.Transactions, out.TPS, text)
	}

	files, err := LogFiles(logDir, "tx")
	if err != nil {
		t.Fatalf("LogFiles: %v", err)
	}
	if len(files) != 2 {
		t.Errorf("log files = %q, want one per thread (2)", files)
	}
	sum, err := SummarizeLogs(files)
	if err != nil {
		t.Fatalf("SummarizeLogs: %v", err)
	}
	if sum.Count != out.Transactions {
		t.Errorf("logged transactions = %d, summary says %d", sum.Count, out.Transactions)
	}
	if !(sum.P50 > 0 && sum.P50 <= sum.P95 && sum.P95 <= sum.P99 && sum.P99 <= sum.MaxMS) {
		t.Errorf("percentiles p50 %v p95 %v p99 %v max %v are not ordered and positive", sum.P50, sum.P95, sum.P99, sum.MaxMS)
	}
	// The summary's average comes from the same per-transaction latencies,
	// rounded to 0.001 ms.
	if d := math.Abs(sum.MeanMS - out.LatencyAvgMS); d > 0.002+0.05*out.LatencyAvgMS {
		t.Errorf("log mean latency %.4f ms vs summary %.3f ms: differ by %.4f", sum.MeanMS, out.LatencyAvgMS, d)
	}
	t.Logf("pgbench %s: %d transactions, %.0f tps; log p50 %.3f p95 %.3f p99 %.3f max %.3f ms",
		out.Version, out.Transactions, out.TPS, sum.P50, sum.P95, sum.P99, sum.MaxMS)

	// A sampled log, as a campaign's measured run has, with pgbench's own
	// progress lines to check its series against: the sample holds about
	// the rate's share of the transactions, and both series have a value per
	// second whose mean is the summary's tps.
	const rate = 0.01
	const secs = 5
	s := RunOptions{Mode: ModeSelectOnly, Clients: 2, Threads: 2, Duration: secs * time.Second,
		LogPrefix: filepath.Join(logDir, "sampled"), SamplingRate: rate, Progress: time.Second}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	text = run(s.Args()...)
	out, err = ParseOutput(text)
	if err != nil {
		t.Fatalf("ParseOutput: %v\n%s", err, text)
	}
	files, err = LogFiles(logDir, "sampled")
	if err != nil {
		t.Fatalf("LogFiles: %v", err)
	}
	sampled, err := SummarizeLogs(files)
	if err != nil {
		t.Fatalf("SummarizeLogs: %v", err)
	}
	// A binomial sample: allow five standard deviations.
	want := rate * float64(out.Transactions)
	if d := math.Abs(float64(sampled.Count) - want); d > 5*math.Sqrt(want*(1-rate)) {
		t.Errorf("sampled log holds %d transactions, want about %.0f (rate %v of %d)", sampled.Count, want, rate, out.Transactions)
	}
	if !(sampled.P50 > 0 && sampled.P50 <= sampled.P95 && sampled.P95 <= sampled.P99 && sampled.P99 <= sampled.MaxMS) {
		t.Errorf("sampled percentiles p50 %v p95 %v p99 %v max %v are not ordered and positive", sampled.P50, sampled.P95, sampled.P99, sampled.MaxMS)
	}
	// The progress lines, which campaigns read their per-second series
	// from, come one per second from the start, the last one missing when
	// the run ends before pgbench prints it (or two on a loaded host). Each
	// is the tps of its second, so together they count the run's
	// transactions, less the seconds missing: not a cumulative count, not a
	// rate scaled by the sampling.
	total := 0.0
	for _, v := range out.Progress {
		total += v
	}
	if n := len(out.Progress); n < secs-2 || n > secs {
		t.Errorf("progress series has %d values for a %d s run, want %d to %d: %v", n, secs, secs-2, secs, out.Progress)
	} else if tx := float64(out.Transactions); total > 1.05*tx || total < 0.5*tx {
		t.Errorf("progress series adds up to %.0f transactions, the run made %d (series %v)", total, out.Transactions, out.Progress)
	}
	t.Logf("sampled at %v: %d of %d transactions logged, %.0f tps; log series %v, progress %v; p50 %.3f p95 %.3f p99 %.3f ms",
		rate, sampled.Count, out.Transactions, out.TPS, sampled.TPSSeries, out.Progress, sampled.P50, sampled.P95, sampled.P99)
}
