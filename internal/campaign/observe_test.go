package campaign

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/profile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// Functions of PostgreSQL's sequential and index scans, as perf names them.
var (
	seqScanFuncs = []string{"heapgettup_pagemode", "heapgettup", "heapgetpage", "heap_getnextslot", "SeqNext", "ExecSeqScan",
		"ExecScan", "ExecScanFetch", "slot_deform_heap_tuple", "tts_buffer_heap_getsomeattrs", "heap_prepare_pagescan", "page_collect_tuples",
		"ExecInterpExpr", "ExecEvalScalarArrayOp", "int4eq", "slot_getsomeattrs_int", "HeapTupleSatisfiesVisibility"}
	indexScanFuncs = []string{"_bt_compare", "_bt_search", "_bt_first", "_bt_readpage", "_bt_binsrch", "_bt_checkkeys", "_bt_next",
		"btgettuple", "btbeginscan", "btrescan", "index_getnext_tid", "index_getnext_slot", "index_fetch_heap", "index_beginscan",
		"IndexNext", "ExecIndexScan", "ExecInitIndexScan", "IndexOnlyNext", "ExecIndexOnlyScan", "heapam_index_fetch_tuple"}
)

// TestCountersAndProfilesExplainASeqScan is the question a reviewer asks of
// a verdict, answered: variant seqscan forbids index scans on select-only,
// so each of its transactions reads the whole of pgbench_accounts. The
// counters must show orders of magnitude more tuples per transaction and
// name that first among the PostgreSQL counters; the profiles must show
// sequential-scan functions on top for seqscan and index-scan functions in
// the baseline's, and the flame graph must name them. The profiles' shares
// shift on a loaded machine (the kernel's own functions take a quarter of
// the samples): it runs alone (testhost.Quiet).
func TestCountersAndProfilesExplainASeqScan(t *testing.T) {
	bin := needPostgres(t)
	needPerf(t)
	testhost.Quiet(t)
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{
			{Name: "index", BinDir: bin, HugePages: "off"},
			{Name: "seqscan", BinDir: bin, HugePages: "off", Settings: map[string]string{"enable_indexscan": "off", "enable_bitmapscan": "off"}},
		},
		Settings: map[string]string{"shared_buffers": "64MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: 3 * time.Second, Iterations: 3, Warmup: time.Second,
		Counters: true, WaitSampleInterval: 100 * time.Millisecond, Profile: ProfileOnePerCell, ProfileFrequency: 499,
		OutDir: out, Clone: true,
	}
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if len(res.Runs) != 3*2+2 {
		t.Fatalf("%d runs, want 6 measured and 2 profiled", len(res.Runs))
	}
	for _, r := range res.Runs {
		c := r.Counters
		if c == nil || r.Client == nil {
			t.Fatalf("run %d has no counters or client CPU: %+v", r.Seq, r)
		}
		// Every transaction commits; the counters' own queries add a few.
		if got := c["pg.xact_commit"]; got < float64(r.Transactions) || got > float64(r.Transactions)+1000 {
			t.Errorf("run %d: pg.xact_commit %g for %d pgbench transactions", r.Seq, got, r.Transactions)
		}
		if c["os.cpu.user_s"] <= 0 || c["os.context_switches"] <= 0 || c["wait.ticks"] < 10 {
			t.Errorf("run %d: os.cpu.user_s %g, os.context_switches %g, wait.ticks %g: want all positive, 10+ ticks in 3 s",
				r.Seq, c["os.cpu.user_s"], c["os.context_switches"], c["wait.ticks"])
		}
		if r.Client.CPUSeconds <= 0 || r.Client.AllowedCPUs <= 0 || r.ClientBound {
			t.Errorf("run %d: client %+v, bound %v: want CPU time used and a client that is not the bottleneck of a seq scan", r.Seq, r.Client, r.ClientBound)
		}
		if r.Profiled != (r.Iteration == 0) || r.Profiled != (r.Profile != "") {
			t.Errorf("run %d (iteration %d): profiled %v, profile %q", r.Seq, r.Iteration, r.Profiled, r.Profile)
		}
	}

	cell := res.Cells[0]
	idx, seq := cell.Variants["index"], cell.Variants["seqscan"]
	if len(idx.TPS) != 3 || len(seq.TPS) != 3 {
		t.Errorf("the statistics use %d and %d runs, want 3 each: the profiled runs are left out", len(idx.TPS), len(seq.TPS))
	}
	ri, rs := idx.CountersCompared["pg.tup_returned/tx"], seq.CountersCompared["pg.tup_returned/tx"]
	t.Logf("tuples returned per transaction: index %.1f, seqscan %.0f; blocks hit per transaction: %.1f vs %.0f",
		ri, rs, idx.CountersCompared["pg.blks_hit/tx"], seq.CountersCompared["pg.blks_hit/tx"])
	if !(rs > 1000*ri) || rs < 50000 {
		t.Errorf("seqscan returns %g tuples per transaction, index %g: want orders of magnitude more (about 100000, the table)", rs, ri)
	}
	cmp := cell.Comparisons[0]
	if cmp.Verdict != report.VerdictSlower {
		t.Errorf("seqscan vs index: %s (%+.1f%%), want slower", cmp.Verdict, cmp.DeltaPct)
	}
	var firstPG string
	for _, d := range cmp.Differed {
		if report.CounterSource(d.Name) == "PostgreSQL" {
			firstPG = d.Name
			break
		}
	}
	if firstPG != "pg.tup_returned/tx" {
		t.Errorf("what differed names %q first among the PostgreSQL counters, want pg.tup_returned/tx; table: %+v", firstPG, cmp.Differed)
	}
	md, err := os.ReadFile(filepath.Join(out, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## What differed", "`pg.tup_returned/tx`", "## Profiles", "left out of the statistics", "call stacks unwound with"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if res.Workload.ProfileOverheadPct == nil {
		t.Error("no profiling overhead stated")
	} else {
		t.Logf("profiled runs ran %+.1f%% against the unprofiled median", *res.Workload.ProfileOverheadPct)
	}

	// The profiles: go tool pprof reads both, the seq scan's functions top
	// seqscan's, the index scan's show in the baseline's and not in it.
	goBin := testhost.RequireCommand(t, "go", "/usr/local/go/bin") // runtime.GOROOT() is empty under -trimpath
	tops := map[string][]profile.Func{}
	for _, v := range []string{"index", "seqscan"} {
		rel := cell.Variants[v].Profile
		if rel == "" {
			t.Fatalf("variant %s has no profile", v)
		}
		outp, err := exec.Command(goBin, "tool", "pprof", "-top", filepath.Join(out, rel)).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof -top %s: %v\n%s", rel, err, outp)
		}
		p, err := profile.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		tops[v] = profile.Top(p, 1000)
		t.Logf("%s: top functions %s", v, topText(tops[v], 8))
	}
	if !anyIn(tops["seqscan"][:min(5, len(tops["seqscan"]))], seqScanFuncs) {
		t.Errorf("seqscan's top 5 functions (%s) hold none of the sequential-scan functions", topText(tops["seqscan"], 5))
	}
	idxIn, idxOut := cumOf(tops["index"], indexScanFuncs), cumOf(tops["seqscan"], indexScanFuncs)
	seqIn, seqOut := flatOf(tops["seqscan"], seqScanFuncs[:12]), flatOf(tops["index"], seqScanFuncs[:12])
	t.Logf("index-scan functions: %.1f%% of index's samples (cumulative), %.2f%% of seqscan's; heap seq-scan functions: %.1f%% of seqscan's (flat), %.2f%% of index's",
		idxIn*100, idxOut*100, seqIn*100, seqOut*100)
	if !(idxIn > 0.01 && idxIn > 10*idxOut) {
		t.Errorf("index-scan functions hold %.2f%% of index's samples and %.2f%% of seqscan's: want them in the baseline's profile, not the seq scan's", idxIn*100, idxOut*100)
	}
	if !(seqIn > 0.1 && seqIn > 10*seqOut) {
		t.Errorf("heap seq-scan functions hold %.1f%% of seqscan's samples and %.2f%% of index's", seqIn*100, seqOut*100)
	}
	if cmp.FlameGraph == "" {
		t.Fatal("no flame graph")
	}
	svg, err := os.ReadFile(filepath.Join(out, cmp.FlameGraph))
	if err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg)
	if !strings.Contains(string(svg), tops["seqscan"][0].Name) || !anyNamed(string(svg), seqScanFuncs) {
		t.Errorf("the flame graph names neither %s nor any sequential-scan function", tops["seqscan"][0].Name)
	}

	// The report a collector takes home holds the profiles.
	m, err := CollectManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	for _, want := range []string{cell.Variants["index"].Profile, cell.Variants["seqscan"].Profile, cmp.FlameGraph} {
		if !slices.Contains(names, want) {
			t.Errorf("the report's manifest lacks %s: %v", want, names)
		}
	}
}

// TestClientBoundIsFlagged throttles pgbench to a twentieth of a CPU with
// a cgroup quota: every run must be flagged client-bound against that
// allowance, and the results must warn that they may measure the client.
// A quota that small is used up on a machine where other work takes its
// turns, but not beside make test's shared lanes, where the builds' compiles
// take most of the CPUs: this test runs alone (testhost.Quiet).
func TestClientBoundIsFlagged(t *testing.T) {
	bin := needPostgres(t)
	testhost.Quiet(t)
	tasks := throttledCgroup(t, 0.05)
	out := scratch(t)
	// Beside the campaign directory: the PostgreSQL user runs it.
	wrapper := filepath.Join(filepath.Dir(out), "throttled")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s || exit 1\nexec \"$@\"\n", tasks)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{4}, Threads: "1", Duration: 3 * time.Second, Iterations: 3, Warmup: time.Second,
		Counters: true, OutDir: out, Clone: true, ClientPrefix: []string{wrapper},
	}
	seedData(t, cfg, "a")
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	for _, r := range res.Runs {
		if r.Client == nil {
			t.Fatalf("run %d has no client CPU", r.Seq)
		}
		t.Logf("run %d: pgbench used %.2f s of CPU in %.2f s, allowed %.2f CPUs: share %.2f", r.Seq, r.Client.CPUSeconds, r.Client.WallSeconds, r.Client.AllowedCPUs, r.Client.Share)
		if math.Abs(r.Client.AllowedCPUs-0.05) > 1e-9 || !r.ClientBound {
			t.Errorf("run %d: allowed %.2f CPUs, bound %v: want 0.05 (the quota) and client-bound", r.Seq, r.Client.AllowedCPUs, r.ClientBound)
		}
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "client-bound") || !strings.Contains(w, "may measure the client") {
		t.Errorf("warnings %q do not say the runs were client-bound", res.Warnings)
	}
}

// throttledCgroup makes a cgroup whose CPU quota is quota CPUs, removed at
// the end, and returns the file a process writes its pid into to join it
// (writable by the PostgreSQL user, who runs pgbench).
func throttledCgroup(t *testing.T, quota float64) string {
	t.Helper()
	testhost.RequireRoot(t)
	name := fmt.Sprintf("pgbt-client-%d", os.Getpid())
	period := 100000
	var dir, tasks string
	switch {
	case exists("/sys/fs/cgroup/cgroup.controllers"): // v2
		dir, tasks = filepath.Join("/sys/fs/cgroup", name), "cgroup.procs"
		os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0)
		if err := os.Mkdir(dir, 0o755); err != nil {
			testhost.Skip(t, "cannot make a cgroup to throttle pgbench: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cpu.max"), fmt.Appendf(nil, "%d %d", int(quota*float64(period)), period), 0); err != nil {
			os.Remove(dir)
			testhost.Skip(t, "cgroup v2 without the cpu controller: %v", err)
		}
	case exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"): // v1
		dir, tasks = filepath.Join("/sys/fs/cgroup/cpu", name), "tasks"
		if err := os.Mkdir(dir, 0o755); err != nil {
			testhost.Skip(t, "cannot make a cgroup to throttle pgbench: %v", err)
		}
		os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), fmt.Appendf(nil, "%d", period), 0)
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), fmt.Appendf(nil, "%d", int(quota*float64(period))), 0); err != nil {
			os.Remove(dir)
			testhost.Skip(t, "cannot set a CPU quota: %v", err)
		}
	default:
		testhost.Skip(t, "no cgroup CPU controller (neither /sys/fs/cgroup/cgroup.controllers nor /sys/fs/cgroup/cpu)")
	}
	t.Cleanup(func() {
		// Its processes have exited with the campaign; rmdir may race
		// their exit for a moment.
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cgroup %s is left behind", dir)
	})
	path := filepath.Join(dir, tasks)
	if err := chownPostgres(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// chownPostgres gives path to the PostgreSQL user.
func chownPostgres(path string) error {
	out, err := exec.Command("chown", "postgres", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown postgres %s: %v: %s", path, err, out)
	}
	return nil
}

// needPerf skips (loudly; fails under PGBENCH_REQUIRE_REAL_HOSTS) unless
// perf can record here.
func needPerf(t *testing.T) {
	t.Helper()
	if err := profile.Check(context.Background()); err != nil {
		testhost.Skip(t, "perf cannot record here: %v", err)
	}
}

func topText(fs []profile.Func, n int) string {
	var parts []string
	for _, f := range fs[:min(n, len(fs))] {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", f.Name, f.Flat*100))
	}
	return strings.Join(parts, ", ")
}

func anyIn(fs []profile.Func, names []string) bool {
	for _, f := range fs {
		if slices.Contains(names, f.Name) {
			return true
		}
	}
	return false
}

func anyNamed(s string, names []string) bool {
	for _, n := range names {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// cumOf is the largest cumulative share of any of names.
func cumOf(fs []profile.Func, names []string) float64 {
	best := 0.0
	for _, f := range fs {
		if slices.Contains(names, f.Name) {
			best = max(best, f.Cum)
		}
	}
	return best
}

// flatOf is the sum of the flat shares of names.
func flatOf(fs []profile.Func, names []string) float64 {
	sum := 0.0
	for _, f := range fs {
		if slices.Contains(names, f.Name) {
			sum += f.Flat
		}
	}
	return sum
}

// checkXML fails unless b is well-formed XML with an <svg> root.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the flame graph is not valid XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("the flame graph's root element is %q, want svg", root)
	}
}
