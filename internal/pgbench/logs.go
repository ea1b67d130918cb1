package pgbench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LogSummary condenses the per-transaction logs of one run.
type LogSummary struct {
	// Count is the number of successful transactions logged (under
	// sampling, the sample, not the estimate).
	Count int64
	// Skipped and Failed count the "skipped" and failure markers
	// ("failed", "serialization", "deadlock", "other") of 15+.
	Skipped, Failed int64
	// Latency percentiles, maximum and mean of successful transactions, in ms.
	P50, P95, P99, MaxMS float64
	MeanMS               float64
	// TPSSeries is successful transactions per whole epoch second, from
	// the first second seen to the last, scaled up by 1/samplingRate.
	TPSSeries []float64
}

// LogFiles returns the per-transaction log files pgbench wrote with
// --log-prefix=dir/prefix: PREFIX.PID for thread 0 and PREFIX.PID.N for
// thread N, sorted by thread.
func LogFiles(dir, prefix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list pgbench logs in %s: %w", dir, err)
	}
	type file struct {
		name   string
		thread int
	}
	var files []file
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok || e.IsDir() {
			continue
		}
		pid, thread, hasThread := strings.Cut(rest, ".")
		if !allDigits(pid) || (hasThread && !allDigits(thread)) {
			continue
		}
		n := 0
		if hasThread {
			n, _ = strconv.Atoi(thread)
		}
		files = append(files, file{filepath.Join(dir, e.Name()), n})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pgbench logs %s.PID[.N] in %s", prefix, dir)
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].thread != files[j].thread {
			return files[i].thread < files[j].thread
		}
		return files[i].name < files[j].name
	})
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.name
	}
	return out, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SummarizeLogs reads pgbench's per-transaction logs (one per thread) as a
// stream, in fixed memory whatever their length: latencies go to a
// histogram (see histogram), per-second counts to a slice as long as the
// run. samplingRate is the --sampling-rate the run used (0 for none).
func SummarizeLogs(files []string, samplingRate float64) (*LogSummary, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("summarize pgbench logs: no files")
	}
	s := &logScanner{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open pgbench log: %w", err)
		}
		err = s.scan(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read pgbench log %s: %w", name, err)
		}
	}
	return s.summary(samplingRate), nil
}

// logScanner accumulates per-transaction log lines.
type logScanner struct {
	hist            histogram
	count           int64
	skipped, failed int64
	firstSec        int64
	perSec          []int64 // index: epoch second - firstSec
}

func (s *logScanner) scan(r io.Reader) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var fields [8][]byte
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("line %d: longer than %d bytes", lineNo, br.Size())
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if perr := s.line(line, &fields); perr != nil {
			return fmt.Errorf("line %d %q: %w", lineNo, bytes.TrimSpace(line), perr)
		}
		if err == io.EOF {
			return nil
		}
	}
}

// line handles "client_id transaction_no time script_no time_epoch time_us
// [schedule_lag] [retries]", where time is the latency in microseconds or,
// in 15+, a marker: "skipped", "failed", "serialization", "deadlock", "other".
func (s *logScanner) line(line []byte, fields *[8][]byte) error {
	n := 0
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\n' || line[i] == '\r') {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\n' && line[j] != '\r' {
			j++
		}
		if n == len(fields) {
			return fmt.Errorf("more than %d fields", len(fields))
		}
		fields[n] = line[i:j]
		n++
		i = j
	}
	if n == 0 {
		return nil
	}
	if n < 6 {
		return fmt.Errorf("%d fields, want at least 6 (client_id transaction_no time script_no time_epoch time_us)", n)
	}
	epoch, ok := atoi(fields[4])
	if !ok {
		return fmt.Errorf("time_epoch %q is not a number", fields[4])
	}
	lat, ok := atoi(fields[2])
	if !ok {
		switch string(fields[2]) {
		case "skipped":
			s.skipped++
		case "failed", "serialization", "deadlock", "other":
			s.failed++
		default:
			return fmt.Errorf("time %q is neither a latency nor a known marker", fields[2])
		}
		return nil
	}
	s.count++
	s.hist.add(lat)
	s.addSecond(epoch)
	return nil
}

func (s *logScanner) addSecond(sec int64) {
	if len(s.perSec) == 0 {
		s.firstSec = sec
		s.perSec = append(s.perSec, 0)
	}
	if sec < s.firstSec {
		// A later thread's file starts earlier: shift the series right.
		shift := int(s.firstSec - sec)
		grown := make([]int64, shift+len(s.perSec))
		copy(grown[shift:], s.perSec)
		s.perSec, s.firstSec = grown, sec
	}
	i := int(sec - s.firstSec)
	if i >= len(s.perSec) {
		if i > 10*24*3600 {
			// A corrupt timestamp must not allocate gigabytes.
			return
		}
		s.perSec = append(s.perSec, make([]int64, i+1-len(s.perSec))...)
	}
	s.perSec[i]++
}

func (s *logScanner) summary(samplingRate float64) *LogSummary {
	scale := 1.0
	if samplingRate > 0 && samplingRate < 1 {
		scale = 1 / samplingRate
	}
	sum := &LogSummary{Count: s.count, Skipped: s.skipped, Failed: s.failed}
	if s.count > 0 {
		sum.P50 = s.hist.quantile(0.50) / 1000
		sum.P95 = s.hist.quantile(0.95) / 1000
		sum.P99 = s.hist.quantile(0.99) / 1000
		sum.MaxMS = float64(s.hist.max) / 1000
		sum.MeanMS = s.hist.sum / float64(s.hist.n) / 1000
	}
	sum.TPSSeries = make([]float64, len(s.perSec))
	for i, c := range s.perSec {
		sum.TPSSeries[i] = float64(c) * scale
	}
	return sum
}

// atoi parses a non-negative decimal integer without allocating.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// histogram counts latencies in microseconds in fixed memory. Values below
// exactLimit are counted exactly (pgbench logs whole microseconds, and most
// OLTP latencies fall there); larger ones go to logarithmic buckets of ratio
// bucketRatio, whose geometric midpoint is within sqrt(1.02)-1 < 1% of any
// value in the bucket.
type histogram struct {
	exact [exactLimit]int64
	log   [logBuckets]int64
	n     int64
	max   int64
	sum   float64
}

const (
	exactLimit  = 4096
	bucketRatio = 1.02
	logBuckets  = 1024 // 4096 us * 1.02^1024 is far beyond any latency
)

var logBase = math.Log(bucketRatio)

func (h *histogram) add(us int64) {
	h.n++
	h.sum += float64(us)
	if us > h.max {
		h.max = us
	}
	if us < exactLimit {
		h.exact[us]++
		return
	}
	h.log[logIndex(us)]++
}

func logIndex(us int64) int {
	i := int(math.Log(float64(us)/exactLimit) / logBase)
	if i >= logBuckets {
		i = logBuckets - 1
	}
	return i
}

// quantile returns the nearest-rank q-quantile in microseconds.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for v, c := range h.exact {
		seen += c
		if seen >= rank {
			return float64(v)
		}
	}
	for i, c := range h.log {
		seen += c
		if seen >= rank {
			lo := exactLimit * math.Pow(bucketRatio, float64(i))
			// pgbench logs whole microseconds, so report one.
			mid := math.Round(lo * math.Sqrt(bucketRatio))
			return math.Min(mid, float64(h.max))
		}
	}
	return float64(h.max)
}

// Interval is one line of an aggregate log (--aggregate-interval).
// Latency and lag figures are in microseconds.
type Interval struct {
	Start                                   time.Time
	Transactions                            int64
	SumLatencyUS, SumLatency2, MinUS, MaxUS float64
	// Lag fields are present under --rate (13, 14) and always from 15 on
	// (zero without --rate).
	SumLagUS, SumLag2, MinLagUS, MaxLagUS float64
	Skipped                               int64
	Retried, Retries                      int64
	// Failures is the sum of the failure columns (serialization, deadlock
	// and, where printed, other); 0 before 15.
	Failures                                       int64
	SerializationFailures, DeadlockFailures, Other int64
}

// ParseAggregateLog parses an aggregate log. The layouts it knows, by
// field count: 6 (13, 14 plain), 10 (13, 14 with --rate), 11 (--rate and
// --latency-limit), 15 (15 to 18: every column always printed), 16 (later
// releases add other_sql_failures).
func ParseAggregateLog(r io.Reader) ([]Interval, error) {
	var out []Interval
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch len(f) {
		case 6, 10, 11, 15, 16:
		default:
			return nil, fmt.Errorf("aggregate log line %d: %d fields, want 6, 10, 11, 15 or 16", lineNo, len(f))
		}
		nums := make([]float64, len(f))
		for i, s := range f {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("aggregate log line %d field %d %q: %w", lineNo, i+1, s, err)
			}
			nums[i] = v
		}
		iv := Interval{
			Start:        time.Unix(int64(nums[0]), 0).UTC(),
			Transactions: int64(nums[1]),
			SumLatencyUS: nums[2], SumLatency2: nums[3], MinUS: nums[4], MaxUS: nums[5],
		}
		if len(f) >= 10 {
			iv.SumLagUS, iv.SumLag2, iv.MinLagUS, iv.MaxLagUS = nums[6], nums[7], nums[8], nums[9]
		}
		if len(f) >= 11 {
			iv.Skipped = int64(nums[10])
		}
		if len(f) >= 15 {
			iv.Retried, iv.Retries = int64(nums[11]), int64(nums[12])
			iv.SerializationFailures, iv.DeadlockFailures = int64(nums[13]), int64(nums[14])
		}
		if len(f) == 16 {
			iv.Other = int64(nums[15])
		}
		iv.Failures = iv.SerializationFailures + iv.DeadlockFailures + iv.Other
		out = append(out, iv)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read aggregate log: %w", err)
	}
	return out, nil
}
