package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goldenResults decodes testdata/results.json.golden, the document the
// fixture campaign writes, as the provider would after collecting it.
func goldenResults(t *testing.T) *Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "results.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeResults(b, "results.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestHistoryEntriesFromResults(t *testing.T) {
	res := goldenResults(t)
	res.Variants[1].BuildKey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	at := time.Date(2026, 12, 1, 8, 30, 0, 0, time.FixedZone("CET", 3600))
	got := HistoryEntries(res, "ab-0001", at)
	if len(got) != 6 {
		t.Fatalf("entries = %d, want 6 (3 client counts x 2 candidates)", len(got))
	}
	e := got[0]
	if e.HistoryVersion != HistoryVersion || e.Campaign != "ab-0001" || !e.RecordedAt.Equal(at) || e.RecordedAt.Location() != time.UTC {
		t.Errorf("entry stamp = version %d, campaign %q, recorded %v; want %d, ab-0001, %v in UTC", e.HistoryVersion, e.Campaign, e.RecordedAt, HistoryVersion, at)
	}
	wantHost := HistoryHost{CPUModel: "Intel(R) Xeon(R) Platinum 8488C", CPUs: 2, Cores: 2, Sockets: 1, NUMANodes: 1,
		MemoryTotalBytes: 24 << 30, Kernel: "6.1.0-28-amd64", OS: "Debian GNU/Linux 12 (bookworm)", THP: "madvise",
		NUMABalancing: "0", HugePages: []HistoryHugePages{{SizeBytes: 2 << 20, Total: 600}}}
	if !reflect.DeepEqual(e.Host, wantHost) {
		t.Errorf("host = %+v, want %+v", e.Host, wantHost)
	}
	wantWL := HistoryWorkload{Mode: "select-only", Scale: 100, DurationSeconds: 30, Clients: 1, Protocol: "prepared"}
	if e.Workload != wantWL {
		t.Errorf("workload = %+v, want %+v", e.Workload, wantWL)
	}
	cell := res.Cells[0]
	c := cell.Comparisons[0]
	if e.Baseline.Name != "stock" || e.Baseline.BuildKey != "" || e.Baseline.BinDir != "/usr/lib/postgresql/15/bin" ||
		e.Baseline.MedianTPS != cell.Variants["stock"].MedianTPS || e.Baseline.HugePages != "off" {
		t.Errorf("baseline = %+v, want stock from the system bin dir, median %v", e.Baseline, cell.Variants["stock"].MedianTPS)
	}
	if e.Candidate.Name != c.Candidate || e.Candidate.BuildKey != res.Variants[1].BuildKey ||
		e.Candidate.Version != "postgres (PostgreSQL) 15.18" || e.Candidate.MedianTPS != cell.Variants[c.Candidate].MedianTPS {
		t.Errorf("candidate = %+v, want %s with its build key and median %v", e.Candidate, c.Candidate, cell.Variants[c.Candidate].MedianTPS)
	}
	if e.Method != c.Method || e.N != 7 || e.DeltaPct != c.DeltaPct || e.CILowPct == nil || *e.CILowPct != *c.CILowPct ||
		e.CILevel != c.CILevel || e.PAdjusted != c.PAdjusted || e.Alpha != 0.05 || e.Verdict != c.Verdict {
		t.Errorf("comparison fields = %+v, want those of %+v", e, c)
	}
	// patched is about 10% faster at every client count, hugepages the same as stock.
	for _, e := range got {
		switch e.Candidate.Name {
		case "patched":
			if e.Verdict != VerdictFaster || math.Abs(e.DeltaPct-10) > 1 {
				t.Errorf("clients=%d patched: %+.2f%% %s, want about +10%% faster", e.Workload.Clients, e.DeltaPct, e.Verdict)
			}
		case "hugepages":
			if e.Verdict != VerdictNoDifference || e.Candidate.HugePages != "on" {
				t.Errorf("clients=%d hugepages: %s with huge pages %s, want no-difference with huge pages on", e.Workload.Clients, e.Verdict, e.Candidate.HugePages)
			}
		default:
			t.Errorf("unexpected candidate %q", e.Candidate.Name)
		}
	}
	if got := HistoryEntries(nil, "x", at); got != nil {
		t.Errorf("HistoryEntries(nil) = %v, want none", got)
	}
}

// The sysinfo document is whatever some runner wrote: a fact of an
// unexpected type is left out, the others are kept.
func TestHistoryHostDefensive(t *testing.T) {
	got := historyHost(map[string]any{
		"cpu_model": "AMD EPYC 9R14", "cpus": "many", "cores": 96, "numa_nodes": "two",
		"hugepages":     []any{map[string]any{"size_bytes": 1 << 30, "total": 4}, "junk", map[string]any{"total": 1}},
		"instance_type": "m7a.metal-48xl", "kernel": 6,
	})
	want := HistoryHost{InstanceType: "m7a.metal-48xl", CPUModel: "AMD EPYC 9R14", Cores: 96,
		HugePages: []HistoryHugePages{{SizeBytes: 1 << 30, Total: 4}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("historyHost = %+v, want %+v", got, want)
	}
	for _, v := range []any{nil, "text", []int{1}} {
		if got := historyHost(v); !reflect.DeepEqual(got, HistoryHost{}) {
			t.Errorf("historyHost(%v) = %+v, want nothing", v, got)
		}
	}
}

func TestHistoryAppendAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pgbench-results", "history.jsonl")
	res := goldenResults(t)
	first := HistoryEntries(res, "ab-0001", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	second := HistoryEntries(res, "ab-0002", time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	if err := AppendHistory(path, first); err != nil {
		t.Fatalf("AppendHistory: %v", err)
	}
	if err := AppendHistory(path, second); err != nil {
		t.Fatalf("AppendHistory again: %v", err)
	}
	if err := AppendHistory(path, nil); err != nil {
		t.Fatalf("AppendHistory with no entries: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 12 || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("history has %d lines, want 12 each ending in a newline", n)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if len(line) >= 4096 {
			t.Errorf("line %d is %d bytes, want under 4 KB", i+1, len(line))
		}
	}
	got, err := ReadHistory(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("ReadHistory: %v", err)
	}
	want := append(append([]HistoryEntry{}, first...), second...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant:\n%+v", got, want)
	}
}

// A writer killed in the middle of its line leaves only that line bad: the
// next append starts on a line of its own.
func TestHistoryAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(`{"history_version":1,"campaign":"torn`), 0o644); err != nil {
		t.Fatal(err)
	}
	entries := HistoryEntries(goldenResults(t), "ab-0003", time.Now())
	if err := AppendHistory(path, entries); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	_, err := ReadHistory(bytes.NewReader(b))
	if err == nil || !strings.Contains(err.Error(), "history line 1:") {
		t.Fatalf("ReadHistory error = %v, want one naming line 1", err)
	}
	rest := b[bytes.IndexByte(b, '\n')+1:]
	if got, err := ReadHistory(bytes.NewReader(rest)); err != nil || len(got) != len(entries) {
		t.Errorf("lines after the torn one: %d entries, error %v; want %d", len(got), err, len(entries))
	}
}

func TestReadHistoryBadLines(t *testing.T) {
	good := `{"history_version":1,"campaign":"a","workload":{"clients":1}}`
	tests := []struct {
		name, text, want string
	}{
		{"not json", good + "\n\nnot json\n", "history line 3: invalid character"},
		{"no version", good + "\n" + `{"campaign":"b"}` + "\n", "history line 2: no history_version"},
		{"newer version", `{"history_version":99}`, "history line 1: history_version 99 is newer than the supported version 1"},
		{"two documents", good + " {}\n", "history line 1: trailing data"},
		{"wrong type", `{"history_version":1,"delta_pct":"fast"}`, "history line 1: json: cannot unmarshal string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadHistory(strings.NewReader(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadHistory error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	got, err := ReadHistory(strings.NewReader("\n" + good + "\r\n\n"))
	if err != nil || len(got) != 1 || got[0].Campaign != "a" {
		t.Errorf("ReadHistory with blank lines = %+v, %v; want the one entry", got, err)
	}
	if got, err := ReadHistory(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Errorf("ReadHistory of an empty file = %+v, %v; want no entries", got, err)
	}
}

// historyAppender is the environment variable that turns the test binary
// into an appender process for TestHistoryConcurrentAppenders.
const historyAppender = "PGBENCH_TEST_HISTORY_APPENDER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(historyAppender); spec != "" {
		os.Exit(appendFromProcess(spec))
	}
	os.Exit(m.Run())
}

// appendFromProcess appends the spec's count of batches of entries whose
// baseline bin dir is padded past 4 KB, so a line is more than one page.
func appendFromProcess(spec string) int {
	path, countText, _ := strings.Cut(spec, ",")
	count, err := strconv.Atoi(countText)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pad := strings.Repeat("x", 5000)
	for i := range count {
		var batch []HistoryEntry
		for c := range 3 {
			batch = append(batch, HistoryEntry{HistoryVersion: HistoryVersion, Campaign: fmt.Sprintf("pid%d-%d", os.Getpid(), i),
				Workload: HistoryWorkload{Clients: c + 1}, Baseline: HistoryVariant{Name: "stock", BinDir: "/" + pad}})
		}
		if err := AppendHistory(path, batch); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Two Terraform resources collecting at once are two processes appending
// to one file: every line must come out whole.
func TestHistoryConcurrentAppenders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	const procs, batches = 4, 40
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), historyAppender+"="+path+","+strconv.Itoa(batches))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start appender: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("appender: %v", err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadHistory(f)
	if err != nil {
		t.Fatalf("ReadHistory after concurrent appends: %v", err)
	}
	if len(got) != procs*batches*3 {
		t.Fatalf("entries = %d, want %d", len(got), procs*batches*3)
	}
	// A batch is one write: its three lines are adjacent.
	for i := 0; i < len(got); i += 3 {
		if got[i].Campaign != got[i+2].Campaign || got[i].Workload.Clients != 1 || got[i+2].Workload.Clients != 3 {
			t.Fatalf("entries %d-%d = %s/%d .. %s/%d, want one batch in order", i, i+2,
				got[i].Campaign, got[i].Workload.Clients, got[i+2].Campaign, got[i+2].Workload.Clients)
		}
	}
}

// historyFixture is two campaigns a day apart on two hosts.
func historyFixture() []HistoryEntry {
	f := func(v float64) *float64 { return &v }
	day := func(d int) time.Time { return time.Date(2026, 12, d, 9, 0, 0, 0, time.UTC) }
	metal := HistoryHost{InstanceType: "m7i.metal-48xl", CPUModel: "Intel(R) Xeon(R) Platinum 8488C", Cores: 96, NUMANodes: 2}
	small := HistoryHost{CPUModel: "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", Cores: 2, NUMANodes: 1}
	stock := HistoryVariant{Name: "stock", Version: "postgres (PostgreSQL) 15.18", BinDir: "/usr/lib/postgresql/15/bin"}
	patched := HistoryVariant{Name: "patched", Version: "postgres (PostgreSQL) 15.18", BinDir: "/opt/pgbench/builds/9f86d081884c7d65/bin",
		BuildKey: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	e := func(at time.Time, id string, host HistoryHost, clients int, delta float64, lo, hi *float64, verdict string) HistoryEntry {
		return HistoryEntry{HistoryVersion: HistoryVersion, RecordedAt: at, Campaign: id, Host: host,
			Workload: HistoryWorkload{Mode: "select-only", Scale: 100, Clients: clients}, Baseline: stock, Candidate: patched,
			Method: MethodPairedT, N: 10, DeltaPct: delta, CILowPct: lo, CIHighPct: hi, CILevel: 0.95, Verdict: verdict}
	}
	return []HistoryEntry{
		e(day(2), "ab-0002", metal, 64, 9.8, f(8.1), f(11.5), VerdictFaster),
		e(day(1), "ab-0001", small, 64, 0.4, f(-1.2), f(2.0), VerdictNoDifference),
		e(day(1), "ab-0001", small, 1, -3.1, nil, nil, VerdictNoDifference),
		e(day(2), "ab-0002", metal, 1, -2.5, f(-3.9), f(-1.1), VerdictSlower),
	}
}

func TestWriteHistoryGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHistory(&b, historyFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "history.md.golden", b.Bytes())
	b.Reset()
	if err := WriteHistory(&b, nil); err != nil || b.String() != "no history entries\n" {
		t.Errorf("WriteHistory(nil) = %q, %v; want a line saying there are none", b.String(), err)
	}
}

func TestGroupHistory(t *testing.T) {
	series := GroupHistory(historyFixture())
	if len(series) != 2 {
		t.Fatalf("series = %d, want one per client count", len(series))
	}
	for i, want := range []int{1, 64} {
		s := series[i]
		if s.Clients != want || s.Baseline != "stock" || s.Candidate != "patched" || s.Mode != "select-only" || len(s.Entries) != 2 {
			t.Errorf("series %d = %s/%s/%s/%d with %d entries, want stock/patched/select-only/%d with 2", i,
				s.Baseline, s.Candidate, s.Mode, s.Clients, len(s.Entries), want)
		}
		if s.Entries[0].Campaign != "ab-0001" || s.Entries[1].Campaign != "ab-0002" {
			t.Errorf("series %d order = %s, %s; want oldest first", i, s.Entries[0].Campaign, s.Entries[1].Campaign)
		}
	}
}

func TestHistoryHostShort(t *testing.T) {
	tests := []struct {
		h    HistoryHost
		want string
	}{
		{HistoryHost{InstanceType: "m7i.metal-48xl", CPUModel: "x", Cores: 96, NUMANodes: 2}, "m7i.metal-48xl, 96 cores, 2 NUMA nodes"},
		{HistoryHost{CPUModel: "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", Cores: 2, NUMANodes: 1}, "Intel Xeon E5-2686 v4, 2 cores"},
		{HistoryHost{CPUModel: "AMD EPYC 9R14 96-Core Processor", Cores: 1}, "AMD EPYC 9R14 96-Core, 1 core"},
		{HistoryHost{}, "n/a"},
	}
	for _, tt := range tests {
		if got := tt.h.Short(); got != tt.want {
			t.Errorf("Short(%+v) = %q, want %q", tt.h, got, tt.want)
		}
	}
}
