package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixture is a fixed three-variant campaign: patched is about 10% faster
// than stock at every client count, hugepages is the same as stock.
func fixture(t *testing.T) *Results {
	t.Helper()
	variants := []Variant{
		{Name: "stock", BinDir: "/usr/lib/postgresql/15/bin", Version: "postgres (PostgreSQL) 15.18",
			Settings: map[string]string{"shared_buffers": "1GB", "max_connections": "200"}, HugePages: "off", HugePagesObserved: "off", DataDir: "/srv/ab/data/stock"},
		{Name: "patched", BinDir: "/opt/pg-patched/bin", Version: "postgres (PostgreSQL) 15.18",
			Settings: map[string]string{"shared_buffers": "1GB", "max_connections": "200"}, HugePages: "off", HugePagesObserved: "off", DataDir: "/srv/ab/data/patched"},
		{Name: "hugepages", BinDir: "/usr/lib/postgresql/15/bin", Version: "postgres (PostgreSQL) 15.18",
			Settings: map[string]string{"shared_buffers": "1GB", "max_connections": "200"}, HugePages: "on", HugePagesObserved: "on", DataDir: "/srv/ab/data/hugepages"},
	}
	clients := []int{1, 16, 64}
	base := map[int]float64{1: 9000, 16: 95000, 64: 120000}
	jitter := []float64{0.995, 1.004, 0.998, 1.006, 1.001, 0.997, 1.003}
	factor := map[string]float64{"stock": 1, "patched": 1.10, "hugepages": 1}
	var runs []Run
	seq := 0
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, c := range clients {
		for it := range jitter {
			order := []string{"stock", "patched", "hugepages"}
			if it%2 == 1 {
				order = []string{"hugepages", "patched", "stock"}
			}
			for vi, v := range order {
				seq++
				j := jitter[(it+vi)%len(jitter)]
				tps := float64(int(base[c]*factor[v]*j*10)) / 10
				lat := float64(int(1e6*float64(c)/tps)) / 1000
				round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
				runs = append(runs, Run{
					Seq: seq, Variant: v, Clients: c, Iteration: it + 1, TPS: tps,
					StartedAt: start.Add(time.Duration(seq) * 31 * time.Second), Seconds: 30.02,
					LatencyMS:    Latency{Avg: lat, Stddev: round(lat / 4), P50: round(lat * 0.9), P95: round(lat * 1.8), P99: round(lat * 2.5)},
					Transactions: int64(tps * 30), PgbenchVersion: "pgbench (PostgreSQL) 15.18",
					LogDir: filepath.Join("logs", v, "c"+itoa(c), "i"+itoa(it+1)),
				})
			}
		}
	}
	runs[4].Drift, runs[4].DriftPct = true, -12.5
	an := AnalysisFor("alternate", 0.05)
	cells, warnings, err := Summarize(variants, clients, runs, an)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	warnings = append([]string{"client and server share CPUs 0-1"}, warnings...)
	return &Results{
		SchemaVersion: SchemaVersion,
		StartedAt:     start,
		FinishedAt:    start.Add(24 * time.Minute),
		WallSeconds:   1440,
		Command: []string{"pgbench-runner", "ab", "--out", "/srv/ab", "--variant", "name=stock,bin=/usr/lib/postgresql/15/bin",
			"--variant", "name=patched,bin=/opt/pg-patched/bin", "--variant", "name=hugepages,bin=/usr/lib/postgresql/15/bin,huge_pages=on",
			"--set", "shared_buffers=1GB", "--set", "max_connections=200", "--mode", "select-only", "--clients", "1,16,64",
			"--duration", "30s", "--iterations", "7", "--server-numa", "cpunodebind=0,membind=0", "--set", "application_name=it's"},
		Variants: variants,
		Workload: Workload{Mode: "select-only", Scale: 100, Clients: clients, Threads: "auto", DurationSeconds: 30,
			Iterations: 7, Protocol: "prepared", WarmupSeconds: 10, Restart: "never", Order: "alternate",
			ServerNUMA: "cpunodebind=0,membind=0", ClientNUMA: "cpunodebind=0"},
		Alpha: 0.05, Method: an.Method(), Correction: an.CorrectionName(),
		Cells:    cells,
		Runs:     runs,
		Warnings: warnings,
		Sysinfo: map[string]any{
			"kernel": "6.1.0-28-amd64", "os": "Debian GNU/Linux 12 (bookworm)", "cpu_model": "Intel(R) Xeon(R) Platinum 8488C",
			"cpus": 2, "cores": 2, "sockets": 1, "threads_per_core": 1,
			"numa_nodes":         []any{map[string]any{"id": 0, "cpus": []int{0, 1}}},
			"memory_total_bytes": int64(24) << 30, "governor": "", "numa_balancing": "0", "thp": "madvise",
			"hugepages": []any{map[string]any{"size_bytes": 2 << 20, "total": 600, "free": 88, "reserved": 0}},
		},
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("update %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	r := fixture(t)
	tests := []struct {
		file  string
		write func(io.Writer) error
	}{
		{"results.json.golden", func(w io.Writer) error { return WriteJSON(w, r) }},
		{"results.csv.golden", func(w io.Writer) error { return WriteCSV(w, r) }},
		{"summary.md.golden", func(w io.Writer) error { return WriteMarkdown(w, r) }},
		{"stock.txt.golden", func(w io.Writer) error { return WriteBenchstat(w, r, "stock") }},
		{"patched.txt.golden", func(w io.Writer) error { return WriteBenchstat(w, r, "patched") }},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatalf("write: %v", err)
			}
			golden(t, tt.file, b.Bytes())
		})
	}
}

func TestFixtureVerdicts(t *testing.T) {
	// The golden files are only worth reading if the fixture says what it
	// was built to say.
	r := fixture(t)
	for _, c := range r.Cells {
		for _, cmp := range c.Comparisons {
			want := VerdictNoDifference
			if cmp.Candidate == "patched" {
				want = VerdictFaster
			}
			if cmp.Verdict != want {
				t.Errorf("clients=%d %s vs %s: verdict = %q (p=%v, delta=%v), want %q",
					c.Clients, cmp.Candidate, cmp.Baseline, cmp.Verdict, cmp.PValue, cmp.DeltaPct, want)
			}
		}
	}
}

func TestDecodeResults(t *testing.T) {
	dir := t.TempDir()
	r := fixture(t)
	path := filepath.Join(dir, ResultsJSONFile)
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readResults(path)
	if err != nil {
		t.Fatalf("DecodeResults: %v", err)
	}
	if g, w := len(got.Runs), len(r.Runs); g != w {
		t.Errorf("runs = %d, want %d", g, w)
	}
	if g, w := got.Cells[2].Variants["patched"].MedianTPS, r.Cells[2].Variants["patched"].MedianTPS; g != w {
		t.Errorf("median = %v, want %v", g, w)
	}
	if g, w := got.Cells[0].Comparisons[0].CILowPct == nil, r.Cells[0].Comparisons[0].CILowPct == nil; g != w {
		t.Errorf("ci_low_pct nil = %v, want %v", g, w)
	}

	for _, tt := range []struct{ name, doc, want string }{
		{"future version", `{"schema_version": 3}`, "schema_version 3"},
		{"no version", `{"cells": []}`, "no schema_version"},
		{"not json", `results`, "decode results"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			if err := os.WriteFile(p, []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readResults(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeResults error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	r := fixture(t)
	if err := WriteAll(dir, r); err != nil {
		t.Fatalf("WriteAll: %v", err)
	}
	for _, name := range []string{ResultsJSONFile, ResultsCSVFile, SummaryFile, "stock.txt", "patched.txt", "hugepages.txt", ChartSVGFile, ChartPNGFile,
		ForestSVGFile, ForestPNGFile, TimelineSVGFile, TimelinePNGFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("stat %s: %v", name, err)
			continue
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}

	for _, name := range []string{ChartPNGFile, ForestPNGFile, TimelinePNGFile} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("decode %s: %v", name, err)
		}
		if got, want := [2]int{img.Bounds().Dx(), img.Bounds().Dy()}, ChartPixels; got != want {
			t.Errorf("%s size = %v, want %v", name, got, want)
		}
	}
	// The forest plot names each comparison; the timeline each variant.
	forest := svgText(t, filepath.Join(dir, ForestSVGFile))
	for _, want := range []string{"1 clients: patched", "64 clients: hugepages", "change, %"} {
		if !strings.Contains(forest, want) {
			t.Errorf("forest.svg text does not contain %q", want)
		}
	}
	timeline := svgText(t, filepath.Join(dir, TimelineSVGFile))
	for _, want := range []string{"stock", "patched", "hugepages", "run (campaign order)"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("timeline.svg text does not contain %q", want)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ChartSVGFile, ForestSVGFile, ForestPNGFile, TimelineSVGFile, TimelinePNGFile} {
		if !strings.Contains(string(md), "("+name+")") {
			t.Errorf("summary.md does not link %s", name)
		}
	}

	svg, err := os.ReadFile(filepath.Join(dir, ChartSVGFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart.svg is not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("chart.svg root element = %q, want svg", root)
	}
	for _, v := range r.Variants {
		if !strings.Contains(text.String(), v.Name) {
			t.Errorf("chart.svg text does not name variant %s", v.Name)
		}
	}
	for _, c := range []string{"1", "16", "64", "clients"} {
		if !strings.Contains(text.String(), c) {
			t.Errorf("chart.svg text does not contain %q", c)
		}
	}
}

// svgText is the character data of an SVG file, which must be XML.
func svgText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
}

func TestWriteAllRefusesUnsafeName(t *testing.T) {
	r := fixture(t)
	r.Variants[1].Name = "../patched"
	err := WriteAll(t.TempDir(), r)
	if err == nil || !strings.Contains(err.Error(), `"../patched"`) {
		t.Fatalf("WriteAll error = %v, want one naming the variant", err)
	}
}

func TestChartAxis(t *testing.T) {
	tests := []struct {
		clients []int
		log     bool
	}{{[]int{1, 16, 64}, true}, {[]int{8, 16, 64}, false}, {[]int{4}, false}}
	for _, tt := range tests {
		var runs []Run
		for i, c := range tt.clients {
			for _, v := range []string{"stock", "patched"} {
				runs = append(runs, Run{Seq: len(runs) + 1, Variant: v, Clients: c, Iteration: 1, TPS: float64(100 * (i + 1))})
			}
		}
		cells, _, err := Summarize(ab(), tt.clients, runs, Analysis{Alpha: 0.05, Paired: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := buildChart(&Results{Variants: ab(), Cells: cells})
		if err != nil {
			t.Fatalf("buildChart(%v): %v", tt.clients, err)
		}
		_, isLog := p.X.Scale.(plot.LogScale)
		if isLog != tt.log {
			t.Errorf("clients %v: log axis = %v, want %v", tt.clients, isLog, tt.log)
		}
		if err := WriteChart(t.TempDir(), &Results{Variants: ab(), Cells: cells}); err != nil {
			t.Errorf("WriteChart(%v): %v", tt.clients, err)
		}
	}
	// An empty campaign still gets a chart rather than an error.
	if err := WriteChart(t.TempDir(), &Results{Variants: ab()}); err != nil {
		t.Errorf("WriteChart(no runs): %v", err)
	}
}

// TestBenchstatReadsFiles runs the real benchstat on the files WriteAll
// wrote and checks that it pairs the cells and shows the delta.
func TestBenchstatReadsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds benchstat")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		testhost.Skip(t, "go command not found: %v", err)
	}
	dir := t.TempDir()
	r := fixture(t)
	if err := WriteAll(dir, r); err != nil {
		t.Fatalf("WriteAll: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "benchstat")
	build := exec.Command(goBin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build benchstat: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "stock.txt", "patched.txt")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"stock.txt", "patched.txt", "tps", "clients=1", "clients=16", "clients=64", "mode=select-only"} {
		if !strings.Contains(text, want) {
			t.Errorf("benchstat output does not contain %q:\n%s", want, text)
		}
	}
	// patched is 10% faster with 7 iterations each: benchstat must show a
	// significant +10% delta, not "~".
	if !strings.Contains(text, "+10.") {
		t.Errorf("benchstat output shows no +10%% delta:\n%s", text)
	}
	if strings.Count(text, "~") > 0 {
		t.Errorf("benchstat output has an insignificant (~) cell:\n%s", text)
	}
}

// TestGoldenFewIterations covers the runbook's default of 3 iterations:
// the table must say that no verdict but no-difference was possible.
func TestGoldenFewIterations(t *testing.T) {
	runs := abRuns([]int{16, 64}, map[string]map[int][]float64{
		"stock":   {16: {50000, 50500, 49800}, 64: {60000, 60100, 59900}},
		"patched": {16: {56000, 56200, 55900}, 64: {60050, 59950, 60000}},
	}, "stock", "patched")
	an := AnalysisFor("randomized", 0.05)
	cells, warnings, err := Summarize(ab(), []int{16, 64}, runs, an)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	r := &Results{
		SchemaVersion: SchemaVersion, Variants: ab(), Alpha: 0.05, Method: an.Method(), Correction: an.CorrectionName(), Cells: cells, Runs: runs, Warnings: warnings,
		Workload: Workload{Mode: "tpcb", Scale: 10, Clients: []int{16, 64}, Iterations: 3, DurationSeconds: 60, Order: "randomized", Seed: 42},
		Command:  []string{"pgbench-runner", "ab", "--mode", "tpcb"},
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatalf("WriteMarkdown: %v", err)
	}
	if !strings.Contains(b.String(), "too few iterations") || !strings.Contains(b.String(), "at least 4 iterations") {
		t.Errorf("summary does not explain that 3 iterations cannot reach significance:\n%s", b.String())
	}
	golden(t, "summary_3_iterations.md.golden", b.Bytes())
}

func TestNumactlCommand(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"cpunodebind=0,membind=0", "numactl --cpunodebind=0 --membind=0"},
		{"cpunodebind=0", "numactl --cpunodebind=0"},
		{"physcpubind=1,3,membind=0", "numactl --physcpubind=1,3 --membind=0"},
		{"interleave=0-1,localalloc", "numactl --interleave=0-1 --localalloc"},
		{"membind=0, cpunodebind=1", "numactl --membind=0 --cpunodebind=1"},
	} {
		if got := numactlCommand(tt.spec); got != tt.want {
			t.Errorf("numactlCommand(%q) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeResults(b, path)
}
