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
// and checks that its summary and its per-transaction log tell the same
// story.
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
	sum, err := SummarizeLogs(files, 0)
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
	// Whole seconds only: the first and last are partial.
	var total float64
	for _, v := range sum.TPSSeries {
		total += v
	}
	if int64(total) != sum.Count {
		t.Errorf("TPS series sums to %v, want the log count %d", total, sum.Count)
	}
	if n := len(sum.TPSSeries); n < 2 || n > 4 {
		t.Fatalf("TPS series has %d seconds for a 2 s run: %v", n, sum.TPSSeries)
	}
	// Count / duration is the series' rate; pgbench's tps divides by the
	// measured benchmark time, which is close to -T.
	if rate := total / out.DurationSeconds; math.Abs(rate-out.TPS)/out.TPS > 0.15 {
		t.Errorf("log rate %.0f tps vs summary %.0f tps: more than 15%% apart", rate, out.TPS)
	}
	t.Logf("pgbench %s: %d transactions, %.0f tps; log p50 %.3f p95 %.3f p99 %.3f max %.3f ms, series %v",
		out.Version, out.Transactions, out.TPS, sum.P50, sum.P95, sum.P99, sum.MaxMS, sum.TPSSeries)
}
