package profile

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// requirePerf skips (or fails) unless perf can record here as root.
func requirePerf(t *testing.T) {
	t.Helper()
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "perf", "/usr/bin")
	if err := Check(context.Background()); err != nil {
		testhost.Skip(t, "perf cannot record: %v", err)
	}
}

func TestRecordArgs(t *testing.T) {
	got, err := Options{Pids: []int{10, 11}, Output: "/tmp/p.data", Unwind: UnwindDWARF}.args()
	if err != nil {
		t.Fatal(err)
	}
	want := "record -e cpu-clock -F 499 --call-graph dwarf,16384 --no-buildid-cache --control fd:3,4 -p 10,11 -o /tmp/p.data"
	if strings.Join(got, " ") != want {
		t.Errorf("args = %q, want %q", strings.Join(got, " "), want)
	}
	got, _ = Options{Pids: []int{7}, Output: "o", Unwind: UnwindFP, Frequency: 99, Event: "task-clock"}.args()
	if want := "record -e task-clock -F 99 --call-graph fp --no-buildid-cache --control fd:3,4 -p 7 -o o"; strings.Join(got, " ") != want {
		t.Errorf("args = %q, want %q", strings.Join(got, " "), want)
	}
	for name, o := range map[string]Options{
		"no pids":   {Output: "o", Unwind: UnwindFP},
		"no output": {Pids: []int{1}, Unwind: UnwindFP},
		"unwind":    {Pids: []int{1}, Output: "o", Unwind: "lbr"},
		"bad pid":   {Pids: []int{0}, Output: "o", Unwind: UnwindFP},
	} {
		if _, err := o.args(); err == nil {
			t.Errorf("args(%s) error = nil, want error", name)
		}
	}
}

func TestTree(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tree, err := Tree(os.Getpid())
	if err != nil {
		t.Fatalf("Tree: %v", err)
	}
	if !slices.Contains(tree, os.Getpid()) || !slices.Contains(tree, cmd.Process.Pid) {
		t.Errorf("Tree(self) = %v, want self %d and child %d", tree, os.Getpid(), cmd.Process.Pid)
	}
	if _, err := Tree(1 << 30); err == nil {
		t.Errorf("Tree(no such pid) error = nil, want error")
	}
}

func TestCheck(t *testing.T) {
	requirePerf(t) // runs Check
	err := CheckPerf(context.Background(), "/nonexistent/perf")
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("CheckPerf(/nonexistent/perf) = %v, want *UnavailableError", err)
	}
	if !strings.Contains(err.Error(), "linux-perf") || !strings.Contains(ue.What, "/nonexistent/perf") {
		t.Errorf("error = %q, want it to name /nonexistent/perf and linux-perf", err)
	}
	// A perf that cannot run (Debian's wrapper without a perf for the kernel).
	fake := filepath.Join(t.TempDir(), "perf")
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'E: linux-perf-6.18 is not installed.' >&2\nexit 1\n"), 0o755)
	if err := CheckPerf(context.Background(), fake); !errors.As(err, &ue) || !strings.Contains(ue.Fix, "linux-perf") || !strings.Contains(ue.What, "not installed") {
		t.Errorf("CheckPerf(failing wrapper) = %v, want *UnavailableError quoting it and naming linux-perf", err)
	}
}

func TestUnwindFor(t *testing.T) {
	dir := t.TempDir()
	for name, cflags := range map[string]string{
		"fp":      "-O2 -g -fno-omit-frame-pointer",
		"dwarf":   "-O2 -g",
		"dwarf-2": "-fno-omit-frame-pointer -O2 -fomit-frame-pointer",
	} {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "pg_config"), []byte("#!/bin/sh\necho '"+cflags+"'\n"), 0o755)
		if got, want := UnwindFor(context.Background(), d), strings.TrimSuffix(name, "-2"); got != want {
			t.Errorf("UnwindFor(cflags %q) = %s, want %s", cflags, got, want)
		}
	}
	if got := UnwindFor(context.Background(), filepath.Join(dir, "none")); got != UnwindDWARF {
		t.Errorf("UnwindFor(no pg_config) = %s, want dwarf", got)
	}
	testhost.RequireCommand(t, "pg_config", pg15)
	out, _ := exec.Command(filepath.Join(pg15, "pg_config"), "--cflags").Output()
	t.Logf("PostgreSQL 15 here: %s (cflags have -fno-omit-frame-pointer: %v)", UnwindFor(context.Background(), pg15), strings.Contains(string(out), "-fno-omit-frame-pointer"))
}

// Functions that only a sequential scan runs, and only an index scan.
var (
	seqScanFuncs   = []string{"SeqNext", "heapgettup", "heapgetpage", "heap_getnextslot", "HeapTupleSatisfiesVisibility", "ExecStoreBufferHeapTuple", "ExecQual", "slot_"}
	indexScanFuncs = []string{"_bt", "index_getnext", "btgettuple", "IndexOnlyNext", "IndexNext", "index_deform_tuple", "visibilitymap_get_status"}
)

func isOneOf(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// recording is what one recorded workload gave.
type recording struct {
	p        *profile.Profile
	path     string // .pb.gz
	samples  int
	seconds  float64 // of the workload
	dataSize int64
	script   time.Duration
	backend  int
}

// recordWorkload records the cluster's processes while sql runs in a new
// connection (a backend forked after perf attached), converts and writes it.
func recordWorkload(t *testing.T, c *pgctl.Cluster, unwind, name, sql string) recording {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pm, err := os.ReadFile(filepath.Join(c.DataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pmPid, _ := strconv.Atoi(strings.SplitN(string(pm), "\n", 2)[0])
	pids, err := Tree(pmPid)
	if err != nil {
		t.Fatalf("Tree(postmaster): %v", err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, name+".data")
	r, err := Start(ctx, Options{Pids: pids, Output: data, Unwind: unwind})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	start := time.Now()
	out, err := c.Psql(ctx, sql+"; select pg_backend_pid()")
	elapsed := time.Since(start)
	if stopErr := r.Stop(); stopErr != nil {
		t.Fatalf("Stop: %v", stopErr)
	}
	if err != nil {
		t.Fatalf("psql: %v", err)
	}
	backend, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("backend pid %q: %v", out, err)
	}
	if slices.Contains(pids, backend) {
		t.Fatalf("backend %d was among the pids perf attached to %v, want a new one", backend, pids)
	}
	fi, _ := os.Stat(data)
	cstart := time.Now()
	p, err := Convert(ctx, data, func(comm string) bool { return comm == "postgres" })
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	rec := recording{p: p, samples: len(p.Sample), seconds: elapsed.Seconds(), dataSize: fi.Size(), script: time.Since(cstart), backend: backend}
	var fromBackend int
	for _, s := range p.Sample {
		if s.NumLabel["pid"][0] == int64(backend) {
			fromBackend++
		}
	}
	// The backend ran flat out: most samples must be its, which shows perf
	// followed a process forked after it attached.
	if fromBackend < rec.samples/2 {
		t.Errorf("%s: %d of %d samples from backend %d (forked after perf attached), want most", name, fromBackend, rec.samples, backend)
	}
	rec.path = filepath.Join(dir, name+".pb.gz")
	if err := WriteFile(rec.path, p); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s): %.2f s, %d samples (%.0f/s, %d from the new backend), perf.data %d kB (%.0f kB/s), perf script+convert %v (%.3f s per s recorded)",
		name, unwind, rec.seconds, rec.samples, float64(rec.samples)/rec.seconds, fromBackend, rec.dataSize>>10,
		float64(rec.dataSize>>10)/rec.seconds, rec.script.Round(time.Millisecond), rec.script.Seconds()/rec.seconds)
	return rec
}

// pprofTop runs `go tool pprof -top` on path and returns its output.
func pprofTop(t *testing.T, path string) string {
	t.Helper()
	goBin := testhost.RequireCommand(t, "go", "/usr/local/go/bin") // runtime.GOROOT() is empty under -trimpath
	out, err := exec.Command(goBin, "tool", "pprof", "-top", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", path, err, out)
	}
	return string(out)
}

func checkTop(t *testing.T, name string, rec recording, want []string) {
	t.Helper()
	top := Top(rec.p, 5)
	var names []string
	found := false
	for _, f := range top {
		names = append(names, f.Name+" "+strconv.FormatFloat(100*f.Flat, 'f', 1, 64)+"%")
		found = found || isOneOf(f.Name, want)
	}
	t.Logf("%s top 5: %s", name, strings.Join(names, ", "))
	if !found {
		t.Errorf("%s: top 5 %v has none of %v", name, names, want)
	}
	out := pprofTop(t, rec.path)
	if !strings.Contains(out, "flat%") || !strings.Contains(out, top[0].Name) {
		t.Errorf("go tool pprof -top %s does not list the top function %s:\n%s", rec.path, top[0].Name, out)
	}
	listed := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && isOneOf(f[len(f)-1], want) {
			listed = true
		}
	}
	if !listed {
		t.Errorf("go tool pprof -top %s lists none of %v:\n%s", rec.path, want, out)
	}
}

// TestRecordPostgres records a real PostgreSQL 15 running a sequential scan
// loop and an index scan loop, each in a connection opened after perf
// attached, and compares them in a differential flame graph.
func TestRecordPostgres(t *testing.T) {
	requirePerf(t)
	testhost.RequireCommand(t, "postgres", pg15)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cleanup, err := pgctl.Scratch(ctx, pg15, map[string]string{"shared_buffers": "32MB", "fsync": "off"})
	if err != nil {
		t.Fatalf("Scratch: %v", err)
	}
	t.Cleanup(cleanup)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	for _, sql := range []string{"create table t as select generate_series(1,200000) i; create index on t(i)", "vacuum analyze t"} {
		if _, err := c.Psql(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// (a) 200,000-row sequential scans for i = 5. (b) index scans: the same
	// count(*), over a range so the index, not executor start-up (which
	// dominates a one-row lookup at 5 µs each), takes the time.
	seqSQL := "set enable_indexscan=off; set enable_bitmapscan=off; do $$ begin for k in 1..120 loop perform count(*) from t where i = 5; end loop; end $$"
	idxSQL := "set enable_seqscan=off; set enable_bitmapscan=off; do $$ begin for k in 1..120 loop perform count(*) from t where i < 100000; end loop; end $$"
	unwind := UnwindFor(ctx, pg15)

	start := time.Now()
	if _, err := c.Psql(ctx, seqSQL); err != nil {
		t.Fatalf("seq scan loop: %v", err)
	}
	bare := time.Since(start).Seconds()

	seq := recordWorkload(t, c, unwind, "seqscan", seqSQL)
	idx := recordWorkload(t, c, unwind, "indexscan", idxSQL)
	t.Logf("overhead (rough, shared machine): seq scan loop %.2f s without perf, %.2f s with perf %s (%+.0f%%)", bare, seq.seconds, unwind, 100*(seq.seconds/bare-1))
	checkTop(t, "seqscan", seq, seqScanFuncs)
	checkTop(t, "indexscan", idx, indexScanFuncs)
	other := UnwindDWARF
	if unwind == UnwindDWARF {
		other = UnwindFP
	}
	seq2 := recordWorkload(t, c, other, "seqscan-"+other, seqSQL)
	checkTop(t, "seqscan-"+other, seq2, seqScanFuncs)

	var buf bytes.Buffer
	if err := WriteDiffFlameGraph(&buf, idx.p, seq.p, "count(*) from t: seq scan against index scan", "index scan", "seq scan"); err != nil {
		t.Fatalf("WriteDiffFlameGraph: %v", err)
	}
	if dir := os.Getenv("PROFILE_KEEP_SVG"); dir != "" {
		os.WriteFile(filepath.Join(dir, "diff.svg"), buf.Bytes(), 0o644)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("flame graph is not valid XML: %v", err)
	}
	redSeq := map[string]bool{}
	for _, g := range doc.G {
		m := tooltipRE.FindStringSubmatch(g.Title)
		if m == nil {
			t.Fatalf("tooltip %q does not read \"func: cand x%% (base y%%, +z pts)\"", g.Title)
		}
		delta, _ := strconv.ParseFloat(m[4], 64)
		r, _, b := parseRGB(t, g.Rect.Fill)
		if delta > 0 && !(r > b) {
			t.Errorf("%s grew (%+.2f pts) but fill %s is not red", m[1], delta, g.Rect.Fill)
		}
		if isOneOf(m[1], seqScanFuncs) && delta > 0 && r > b {
			redSeq[m[1]] = true
		}
	}
	t.Logf("flame graph: %d frames, %d bytes; seq-scan functions in red: %v", len(doc.G), buf.Len(), redSeq)
	if len(redSeq) == 0 {
		t.Errorf("no seq-scan function (%v) drawn red in the flame graph of seq scan against index scan", seqScanFuncs)
	}
}
