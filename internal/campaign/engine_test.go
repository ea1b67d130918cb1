package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAAIsNoDifference runs the same binaries and settings as two variants:
// every cell must say no-difference, the order must be the alternation
// promised, and the second variant's data must be a clone of the first's.
func TestAAIsNoDifference(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: 2 * time.Second, Iterations: 5,
		// 5 vs 5 can reach p = 0.008, so alpha 0.01 is a real test that
		// identical variants rarely fail by chance (about 1 in 125).
		Alpha: 0.01, OutDir: out, Clone: true,
		// The counters too: "what differed" of an A/A campaign lists none.
		Counters: true,
	}
	// a's dataset is the shared one; b's is cloned from it, as the
	// campaign clones (what this test checks).
	seedData(t, cfg, "a")
	var rec recorder
	res, err := Execute(context.Background(), cfg, rec.on)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	checkOrder(t, cfg, res.Runs)
	if got, want := planString(cfg.Plan()), "a b b a a b b a a b"; got != want {
		t.Errorf("alternate plan = %q, want %q", got, want)
	}
	if len(res.Cells) != 1 || len(res.Cells[0].Comparisons) != 1 {
		t.Fatalf("cells = %+v, want one cell with one comparison", res.Cells)
	}
	cmp := res.Cells[0].Comparisons[0]
	if cmp.Verdict != report.VerdictNoDifference || cmp.Baseline != "a" || cmp.Candidate != "b" {
		t.Errorf("A/A comparison = %+v, want b vs a no-difference", cmp)
	}
	if cmp.CountersTested < 10 || len(cmp.Differed) != 0 {
		t.Errorf("A/A: %d counters tested, what differed lists %+v; want many tested and none listed", cmp.CountersTested, cmp.Differed)
	} else if md, err := os.ReadFile(filepath.Join(out, "summary.md")); err != nil || !strings.Contains(string(md), fmt.Sprintf("none of the %d counters compared differs", cmp.CountersTested)) {
		t.Errorf("summary.md does not say that none of the %d counters differs (%v)", cmp.CountersTested, err)
	}
	for _, v := range []string{"a", "b"} {
		vc := res.Cells[0].Variants[v]
		if len(vc.TPS) != 5 || vc.MedianTPS <= 0 || vc.MedianTPS < vc.MinTPS || vc.MedianTPS > vc.MaxTPS {
			t.Errorf("variant %s cell = %+v, want 5 positive samples around the median", v, vc)
		}
	}
	// A 2 s run's logs span one whole second, or none when its first
	// transactions start late: some run must have a series, none more
	// than its seconds.
	withSeries := 0
	for _, r := range res.Runs {
		if r.Transactions <= 0 || r.Seconds < 2 || r.PgbenchVersion == "" || r.LatencyMS.P99 <= 0 || len(r.TPSSeries) > 2 {
			t.Errorf("run %d = %+v, want transactions, >= 2 s, a version, p99 and at most 2 seconds of series", r.Seq, r)
		}
		if len(r.TPSSeries) > 0 {
			withSeries++
		}
		if _, err := os.Stat(filepath.Join(out, r.LogDir, "stdout")); err != nil {
			t.Errorf("run %d raw output: %v", r.Seq, err)
		}
	}
	if withSeries == 0 {
		t.Errorf("no run of %d has a per-second series", len(res.Runs))
	}
	st, err := readStamp(stampPath(filepath.Join(out, "data"), "b"))
	if err != nil || st.ClonedFrom != "a" {
		t.Errorf("stamp of b = %+v, %v, want cloned from a (same catalog version)", st, err)
	}
	for _, f := range []string{"results.json", "results.csv", "summary.md", "a.txt", "b.txt", "chart.svg", "chart.png", SysinfoFile, JournalFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("output %s: %v", f, err)
		}
	}
	back, err := readResults(filepath.Join(out, "results.json"))
	if err != nil || len(back.Runs) != 10 {
		t.Errorf("results.json: %v runs, %v; want 10", len(back.Runs), err)
	}
	if n := rec.count(EventRunDone); n != 10 {
		t.Errorf("run_done events = %d, want 10", n)
	}

	// The same campaign again runs nothing and reuses the datasets.
	var again recorder
	res2, err := Execute(context.Background(), cfg, again.on)
	if err != nil {
		t.Fatalf("second Execute: %v", err)
	}
	if again.count(EventRunStart) != 0 || again.count(EventRunSkipped) != 10 || len(res2.Runs) != 10 {
		t.Errorf("second run: %d started, %d skipped, %d runs; want 0, 10, 10", again.count(EventRunStart), again.count(EventRunSkipped), len(res2.Runs))
	}
	if got := res2.Variants[1].HugePagesObserved; got != "off" {
		t.Errorf("resumed huge_pages_observed of b = %q, want off from the journal", got)
	}
	if res2.Runs[3].TPS != res.Runs[3].TPS {
		t.Errorf("resumed results changed run 4: %v, want %v", res2.Runs[3].TPS, res.Runs[3].TPS)
	}
}

// TestRealEffectAndRemoveData compares synchronous_commit=on with off on
// tpcb, where commits wait for WAL flushes: off must be found faster. The
// order is randomized with a seed and checked; then --remove-data.
func TestRealEffectAndRemoveData(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{{Name: "sync_on", BinDir: bin, HugePages: "off"}, {Name: "sync_off", BinDir: bin, HugePages: "off", Settings: map[string]string{"synchronous_commit": "off"}}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "tpcb", Scale: 1, Clients: []int{4}, Duration: 2 * time.Second, Iterations: 4,
		Order: OrderRandomized, Seed: 7, SeedSet: true, OutDir: out,
	}
	seedData(t, cfg, "sync_on", "sync_off")
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	checkOrder(t, cfg, res.Runs)
	if res.Workload.Seed != 7 || res.Workload.Order != OrderRandomized {
		t.Errorf("workload order %q seed %d, want randomized 7", res.Workload.Order, res.Workload.Seed)
	}
	cmp := res.Cells[0].Comparisons[0]
	if cmp.Candidate != "sync_off" || cmp.Verdict != report.VerdictFaster || cmp.DeltaPct <= 0 || cmp.PValue > 0.05 {
		t.Errorf("sync_off vs sync_on = %+v, want faster with p <= 0.05", cmp)
	}
	if got := res.Variants[1].Settings["synchronous_commit"]; got != "off" {
		t.Errorf("sync_off settings synchronous_commit = %q, want off", got)
	}
	// Each run's raw log is compressed once summarized.
	for _, r := range res.Runs {
		dir := filepath.Join(out, r.LogDir)
		gz, _ := filepath.Glob(filepath.Join(dir, "pgbench_log.*.gz"))
		all, _ := filepath.Glob(filepath.Join(dir, "pgbench_log.*"))
		if len(gz) == 0 || len(gz) != len(all) {
			t.Errorf("run %d logs %q, want every pgbench_log compressed", r.Seq, all)
		}
		if r.LoggedTransactions <= 0 || r.LatencyMS.P99 <= 0 {
			t.Errorf("run %d: %d logged transactions, p99 %v ms: want its log summarized", r.Seq, r.LoggedTransactions, r.LatencyMS.P99)
		}
	}

	data := filepath.Join(out, "data")
	removed, err := RemoveData(context.Background(), out, "")
	if err != nil || len(removed) != 2 {
		t.Fatalf("RemoveData = %v, %v, want two directories", removed, err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want it gone", data, err)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("results.json must survive RemoveData: %v", err)
	}
	removed, err = RemoveData(context.Background(), out, "")
	if err != nil || len(removed) != 0 {
		t.Errorf("second RemoveData = %v, %v, want nothing to do", removed, err)
	}
	// The finished campaign again rebuilds its results without data.
	again, err := Execute(context.Background(), cfg, nil)
	if err != nil || len(again.Runs) != len(res.Runs) {
		t.Fatalf("finished campaign after RemoveData: %v, %v", again, err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("re-running a finished campaign recreated %s (%v); it needs no data", data, err)
	}
}

// TestKillAndResume kills a real campaign process with SIGKILL in the
// middle, then runs the same campaign: only the missing runs run, the
// earlier ones are kept as they were.
func TestKillAndResume(t *testing.T) {
	bin := needPostgres(t)
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off", Settings: map[string]string{"work_mem": "8MB"}}},
		Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: 2 * time.Second, Iterations: 3, OutDir: out,
	}
	seedData(t, cfg, "a", "b")
	before := killMidCampaign(t, cfg, 2, 6)
	j, err := openJournal(out, cfg.definition(), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	earlier := j.Runs
	j.Close()

	var rec recorder
	res, err := Execute(context.Background(), cfg, rec.on)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got, want := rec.count(EventRunStart), 6-before; got != want {
		t.Errorf("resume started %d runs, want %d (the missing ones)", got, want)
	}
	if got := rec.count(EventRunSkipped); got != before {
		t.Errorf("resume skipped %d runs, want %d", got, before)
	}
	checkOrder(t, cfg, res.Runs)
	for seq, r := range earlier {
		got := res.Runs[seq-1]
		if !got.StartedAt.Equal(r.StartedAt) || got.TPS != r.TPS {
			t.Errorf("run %d after resume = %v at %v, want the journaled %v at %v", seq, got.TPS, got.StartedAt, r.TPS, r.StartedAt)
		}
	}
}

// TestHugePagesOnWithoutPool starts a huge_pages=on variant with an empty
// pool: it must fail clearly, naming the variant, and not fall back.
func TestHugePagesOnWithoutPool(t *testing.T) {
	bin := needPostgres(t)
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	if err := os.WriteFile(testhost.SysctlPath("vm.nr_hugepages"), []byte("0"), 0o644); err != nil {
		t.Fatalf("empty the pool: %v", err)
	}
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{{Name: "hp", BinDir: bin, HugePages: "on"}, {Name: "plain", BinDir: bin, HugePages: "off"}},
		Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: time.Second, Iterations: 1, OutDir: out,
	}
	seedData(t, cfg, "hp", "plain")
	_, err := Execute(context.Background(), cfg, nil)
	var ue *UnmetError
	if err == nil || !errors.As(err, &ue) {
		t.Fatalf("Execute = %v, want an *UnmetError", err)
	}
	for _, want := range []string{"variant hp", "huge_pages=on", "HugePages_Total=0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if n := journalRuns(t, out); n != 0 {
		t.Errorf("journal has %d runs, want none", n)
	}

	// With a pool large enough, the same campaign runs and records that the
	// segment really came from the pool.
	if err := os.WriteFile(testhost.SysctlPath("vm.nr_hugepages"), []byte("64"), 0o644); err != nil {
		t.Fatalf("reserve the pool: %v", err)
	}
	cfg.Settings = map[string]string{"shared_buffers": "16MB"}
	cfg.Fresh = true
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute with a pool: %v", err)
	}
	for i, want := range []string{"on", "off"} {
		if got := res.Variants[i].HugePagesObserved; got != want {
			t.Errorf("variant %s huge_pages_observed = %q, want %q", res.Variants[i].Name, got, want)
		}
	}
}

// TestCancelStopsCleanly cancels the context mid-campaign (what SIGINT
// does in the runner), once in the middle of a run and once between two
// runs, where the next run's first act is to stop the server the last
// one used: the error wraps context.Canceled, the journal keeps the
// finished runs, and no server is left running.
func TestCancelStopsCleanly(t *testing.T) {
	bin := needPostgres(t)
	for _, tc := range []struct {
		name  string
		event string
		nth   int
		after time.Duration
	}{
		{"mid-run", EventRunStart, 2, time.Second},
		{"between-runs", EventRunDone, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := scratch(t)
			cfg := &Config{
				Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
				Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: 3 * time.Second, Iterations: 2, OutDir: out,
			}
			seedData(t, cfg, "a", "b")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := 0
			on := func(e Event) {
				if e.Event != tc.event {
					return
				}
				if seen++; seen != tc.nth {
					return
				}
				if tc.after == 0 {
					cancel()
				} else {
					time.AfterFunc(tc.after, cancel)
				}
			}
			t0 := time.Now()
			_, err := Execute(ctx, cfg, on)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Execute = %v, want context.Canceled", err)
			}
			if d := time.Since(t0); d > 30*time.Second {
				t.Errorf("cancel took the campaign %v to stop", d)
			}
			if n := journalRuns(t, out); n != 1 {
				t.Errorf("journal has %d runs, want 1", n)
			}
			for _, v := range []string{"a", "b"} {
				if _, err := os.Stat(filepath.Join(out, "data", v, "postmaster.pid")); !os.IsNotExist(err) {
					t.Errorf("variant %s: postmaster.pid = %v, want no server left running", v, err)
				}
			}
		})
	}
}
