package pgbench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestParseOutputFields pins the figures a campaign depends on, read off
// the inputs by hand, so a wrong golden cannot hide a wrong parser.
func TestParseOutputFields(t *testing.T) {
	tests := []struct {
		file                 string
		version, server      string
		tps                  float64
		transactions, failed int64
		latAvg, latStddev    float64
		clients, threads     int
		progress             int
	}{
		{"output_13_select_only_progress.input", "", "", 24134.960413, 48253, 0, 0.082, 0.029, 2, 2, 2},
		{"output_13_tpcb.input", "", "", 3057.248216, 183421, 0, 2.617, 0, 8, 4, 0},
		{"output_14_select_only_server13.input", "14.11", "13.14", 30125.447380, 301234, 0, 0.132, 0.043, 4, 2, 2},
		{"output_15_tpcb_real.input", "15.18 (Debian 15.18-0+deb12u1)", "", 1571.446743, 3138, 0, 1.273, 0, 2, 2, 0},
		{"output_15_select_only_progress_real.input", "15.18 (Debian 15.18-0+deb12u1)", "", 49672.516809, 148646, 0, 0.040, 0.128, 2, 2, 2},
		{"output_16_tpcb_failures.input", "16.4", "", 1738.081227, 52144, 312, 5.719, 0, 10, 2, 0},
		{"output_17_select_only_server16_progress.input", "17.2", "16.6", 41372.802551, 413675, 0, 0.193, 0.050, 8, 8, 2},
		{"output_18_multiple_scripts.input", "18.1", "", 7624.170036, 38112, 0, 0.524, 0, 4, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			o, err := ParseOutput(string(text))
			if err != nil {
				t.Fatalf("ParseOutput: %v", err)
			}
			if o.Version != tt.version || o.ServerVersion != tt.server {
				t.Errorf("version = %q, server %q, want %q, %q", o.Version, o.ServerVersion, tt.version, tt.server)
			}
			if o.TPS != tt.tps {
				t.Errorf("TPS = %v, want %v", o.TPS, tt.tps)
			}
			if o.Transactions != tt.transactions || o.Failed != tt.failed {
				t.Errorf("transactions, failed = %d, %d, want %d, %d", o.Transactions, o.Failed, tt.transactions, tt.failed)
			}
			if o.LatencyAvgMS != tt.latAvg || o.LatencyStddevMS != tt.latStddev {
				t.Errorf("latency avg, stddev = %v, %v, want %v, %v", o.LatencyAvgMS, o.LatencyStddevMS, tt.latAvg, tt.latStddev)
			}
			if o.Clients != tt.clients || o.Threads != tt.threads {
				t.Errorf("clients, threads = %d, %d, want %d, %d", o.Clients, o.Threads, tt.clients, tt.threads)
			}
			if len(o.Progress) != tt.progress {
				t.Errorf("progress lines = %d, want %d", len(o.Progress), tt.progress)
			}
		})
	}
}

func TestParseOutputErrors(t *testing.T) {
	tests := []struct {
		file    string
		aborted bool
		want    string
	}{
		{"output_13_aborted.input", true, "division by zero"},
		{"output_15_aborted_real.input", true, "division by zero"},
		{"output_17_aborted.input", true, "terminating connection"},
		{"output_15_noconnect_real.input", false, "could not create connection"},
		{"output_not_pgbench.input", false, "not pgbench output"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseOutput(string(text))
			if err == nil {
				t.Fatal("ParseOutput = nil error, want an error")
			}
			var ab *AbortedError
			if got := errors.As(err, &ab); got != tt.aborted {
				t.Errorf("errors.As(%v, *AbortedError) = %v, want %v", err, got, tt.aborted)
			}
			if !tt.aborted && !errors.Is(err, ErrNotOutput) {
				t.Errorf("errors.Is(%v, ErrNotOutput) = false, want true", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	if _, err := ParseOutput(""); !errors.Is(err, ErrNotOutput) {
		t.Errorf("ParseOutput(\"\") = %v, want ErrNotOutput", err)
	}
}

// TestHistogramAccuracy checks the percentiles of a wide latency
// distribution against exact ones: within 1% relative error.
func TestHistogramAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h histogram
	vals := make([]int64, 200000)
	for i := range vals {
		// Log-normal around 2 ms with a long tail, up to seconds.
		v := int64(math.Exp(r.NormFloat64()*1.5 + math.Log(2000)))
		vals[i] = v
		h.add(v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
		exact := float64(vals[int(math.Ceil(q*float64(len(vals))))-1])
		got := h.quantile(q)
		if rel := math.Abs(got-exact) / exact; rel > 0.01 {
			t.Errorf("quantile(%v) = %v, exact %v: relative error %.4f, want <= 0.01", q, got, exact, rel)
		}
	}
	if got, want := h.max, vals[len(vals)-1]; got != want {
		t.Errorf("max = %d, want %d", got, want)
	}
}

func TestSummarizeLogsThreads(t *testing.T) {
	dir := t.TempDir()
	// Two threads of one run; the second starts a second earlier.
	write := func(name string, lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tx.4242", "0 1 1000 0 100 5", "0 2 3000 0 101 5", "0 3 2000 0 101 9")
	write("tx.4242.1", "1 1 4000 0 99 5", "1 2 skipped 0 101 7")
	write("tx.4242.x", "garbage")
	write("other.4242", "garbage")
	files, err := LogFiles(dir, "tx")
	if err != nil {
		t.Fatalf("LogFiles: %v", err)
	}
	want := []string{filepath.Join(dir, "tx.4242"), filepath.Join(dir, "tx.4242.1")}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("LogFiles = %q, want %q", files, want)
	}
	s, err := SummarizeLogs(files)
	if err != nil {
		t.Fatalf("SummarizeLogs: %v", err)
	}
	if s.Count != 4 || s.Skipped != 1 {
		t.Errorf("count, skipped = %d, %d, want 4, 1", s.Count, s.Skipped)
	}
	if s.P50 != 2 || s.MaxMS != 4 {
		t.Errorf("p50, max = %v, %v ms, want 2, 4", s.P50, s.MaxMS)
	}
	// Both clients' lines span only second 101: no whole second.
	if s.TPSSeries != nil {
		t.Errorf("TPSSeries = %v, want none", s.TPSSeries)
	}
	if _, err := LogFiles(dir, "none"); err == nil {
		t.Error("LogFiles(none) = nil error, want one")
	}
	if _, err := SummarizeLogs([]string{filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("SummarizeLogs(missing) = %v, want an error naming the file", err)
	}
}

// TestSummarizeLogsSampledSeries checks the per-second series of a sampled
// log against the whole log it was sampled from: each client's
// transaction_no counts every transaction, so 1% of the lines give the
// same series, not one with 1% of the counts and their noise.
func TestSummarizeLogsSampledSeries(t *testing.T) {
	dir := t.TempDir()
	// Rates that jump at second boundaries are the worst case for the
	// interpolation between two lines of a client.
	perSecond := [][]int{{9000, 18000, 15000, 30000, 24000, 12000}, {11000, 22000, 15000, 10000, 26000, 8000}}
	var want []float64
	for sec := 1; sec < len(perSecond[0])-1; sec++ {
		want = append(want, float64(perSecond[0][sec]+perSecond[1][sec]))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rate := range []float64{1, 0.01} {
		var files []string
		for client, counts := range perSecond {
			var b strings.Builder
			cnt := 0
			for sec, n := range counts {
				for i := 0; i < n; i++ {
					cnt++
					// Transactions end evenly within their second.
					us := (2*i + 1) * 500000 / n
					if rate == 1 || rng.Float64() < rate {
						fmt.Fprintf(&b, "%d %d 150 0 %d %d\n", client, cnt, 1700000000+sec, us)
					}
				}
			}
			name := filepath.Join(dir, fmt.Sprintf("tx%v.1.%d", rate, client))
			if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
		s, err := SummarizeLogs(files)
		if err != nil {
			t.Fatalf("SummarizeLogs: %v", err)
		}
		t.Logf("rate %v: series %v, want %v", rate, s.TPSSeries, want)
		// The first and last seconds are not spanned by both clients' lines.
		if len(s.TPSSeries) != len(want) {
			t.Fatalf("rate %v: TPSSeries = %v, want %d seconds like %v", rate, s.TPSSeries, len(want), want)
		}
		for i, v := range s.TPSSeries {
			if math.Abs(v-want[i]) > 0.002*want[i] {
				t.Errorf("rate %v: TPSSeries = %v, want %v within 0.2%%", rate, s.TPSSeries, want)
				break
			}
		}
	}
}

// writeSyntheticLog writes n log lines of one thread at rate lines/second.
func writeSyntheticLog(path string, n, rate int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]byte, 0, 1<<20)
	for i := 0; i < n; i++ {
		lat := int(math.Exp(r.NormFloat64()*0.7 + math.Log(150)))
		sec := 1700000000 + i/rate
		w = fmt.Appendf(w, "%d %d %d 0 %d %d\n", i%64, i/64+1, lat, sec, (i%rate)*(1000000/rate))
		if len(w) > 1<<20-100 {
			if _, err := f.Write(w); err != nil {
				f.Close()
				return err
			}
			w = w[:0]
		}
	}
	if _, err := f.Write(w); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// BenchmarkSummarizeLogs measures the log reader on 2M lines (a 5 s run at
// 400k tps); a 60 s run at that rate is 12 times as long.
func BenchmarkSummarizeLogs(b *testing.B) {
	const lines = 2_000_000
	path := filepath.Join(b.TempDir(), "tx.1")
	if err := writeSyntheticLog(path, lines, 400_000); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := SummarizeLogs([]string{path})
		if err != nil {
			b.Fatal(err)
		}
		if s.Count != lines {
			b.Fatalf("count = %d, want %d", s.Count, lines)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestSummarizeLogsFixedMemory checks that the reader's allocations do not
// grow with the number of lines (only with the run's length in seconds).
func TestSummarizeLogsFixedMemory(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small.1"), filepath.Join(dir, "large.1")
	// Both within one second of log time, 20 times apart in lines.
	if err := writeSyntheticLog(small, 10_000, 400_000); err != nil {
		t.Fatal(err)
	}
	if err := writeSyntheticLog(large, 200_000, 400_000); err != nil {
		t.Fatal(err)
	}
	allocs := func(path string) float64 {
		return testing.AllocsPerRun(3, func() {
			if _, err := SummarizeLogs([]string{path}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if a, b := allocs(small), allocs(large); b > a {
		t.Errorf("allocations: %v for 10k lines, %v for 200k lines, want no growth", a, b)
	}
}
