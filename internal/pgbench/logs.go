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
	// TPSSeries is transactions per whole second (of the log's clock), over
	// the seconds every client's logged lines span. It is exact under
	// sampling too: a line's transaction_no is the client's count of all its
	// transactions, logged or not, so the count at a second boundary is
	// interpolated between two lines of each client, a few transactions
	// apart.
	TPSSeries []float64
}

// LogFiles returns the per-transaction log files pgbench wrote with
// --log-prefix=dir/prefix: PREFIX.PID for thread 0 and PREFIX.PID.N for
// thread N, sorted by thread; each may be gzip-compressed (CompressLogs)
// and end in .gz.
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
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok || e.IsDir() {
			continue
		}
		// Compressed already, the plain copy not yet removed: one is enough.
		if !strings.HasSuffix(e.Name(), gzSuffix) && names[e.Name()+gzSuffix] {
			continue
		}
		rest = strings.TrimSuffix(rest, gzSuffix)
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
// histogram (see histogram), per-second counts to a map as long as the run
// in seconds. A sampled log (--sampling-rate) gives the percentiles of its
// sample and still an exact per-second series (see LogSummary.TPSSeries):
// pgbench refuses --sampling-rate together with --aggregate-interval, the
// other source of one.
func SummarizeLogs(files []string) (*LogSummary, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("summarize pgbench logs: no files")
	}
	s := &logScanner{}
	for _, name := range files {
		f, err := openLog(name)
		if err != nil {
			return nil, fmt.Errorf("open pgbench log: %w", err)
		}
		err = s.scan(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read pgbench log %s: %w", name, err)
		}
	}
	return s.summary(), nil
}

// logScanner accumulates per-transaction log lines.
type logScanner struct {
	hist            histogram
	count           int64
	skipped, failed int64
	// last is each client's last line, by client_id; clients counts those
	// seen.
	last    []clientPoint
	clients int
	// seconds holds, by whole second of the log's clock, the clients'
	// interpolated transaction counts at that instant.
	seconds map[int64]*secondCount
}

// clientPoint is a client's logged transaction: when it ended, in
// microseconds of the log's clock, and the client's transaction count then.
type clientPoint struct {
	seen    bool
	us, cnt int64
}

// secondCount sums the transaction counts of clients at a second boundary,
// and how many clients' lines span it.
type secondCount struct {
	cnt     float64
	clients int
}

// maxClientID bounds the client_id a log line may have: the scanner keeps a
// slot per client, and a corrupt id must not allocate gigabytes.
const maxClientID = 1 << 20

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
	client, ok := atoi(fields[0])
	if !ok || client >= maxClientID {
		return fmt.Errorf("client_id %q is not a number below %d", fields[0], maxClientID)
	}
	cnt, ok := atoi(fields[1])
	if !ok {
		return fmt.Errorf("transaction_no %q is not a number", fields[1])
	}
	epoch, ok := atoi(fields[4])
	if !ok {
		return fmt.Errorf("time_epoch %q is not a number", fields[4])
	}
	us, ok := atoi(fields[5])
	if !ok || us >= 1e6 {
		return fmt.Errorf("time_us %q is not a number of microseconds below a second", fields[5])
	}
	s.track(int(client), epoch*1e6+us, cnt)
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
	return nil
}

// track adds a client's line at time us with its transaction count cnt:
// for each whole second since the client's previous line, the count the
// client had reached then, interpolated between the two lines.
func (s *logScanner) track(client int, us, cnt int64) {
	if client >= len(s.last) {
		s.last = append(s.last, make([]clientPoint, client+1-len(s.last))...)
	}
	p := s.last[client]
	if !p.seen {
		s.last[client] = clientPoint{seen: true, us: us, cnt: cnt}
		s.clients++
		return
	}
	if us < p.us || cnt < p.cnt {
		// Out of order: not a later transaction of this client.
		return
	}
	s.last[client] = clientPoint{seen: true, us: us, cnt: cnt}
	first, last := p.us/1e6+1, us/1e6
	if last-first > 10*24*3600 {
		// A corrupt timestamp must not allocate gigabytes.
		return
	}
	if s.seconds == nil {
		s.seconds = map[int64]*secondCount{}
	}
	for sec := first; sec <= last; sec++ {
		f := float64(sec*1e6-p.us) / float64(us-p.us)
		c := s.seconds[sec]
		if c == nil {
			c = &secondCount{}
			s.seconds[sec] = c
		}
		c.cnt += float64(p.cnt) + f*float64(cnt-p.cnt)
		c.clients++
	}
}

// series is the transactions of each whole second spanned by every
// client's lines, rounded to 0.1 as pgbench's progress lines are.
func (s *logScanner) series() []float64 {
	var secs []int64
	for sec, c := range s.seconds {
		if c.clients == s.clients {
			secs = append(secs, sec)
		}
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	var out []float64
	for i := 1; i < len(secs) && secs[i] == secs[i-1]+1; i++ {
		out = append(out, math.Round((s.seconds[secs[i]].cnt-s.seconds[secs[i-1]].cnt)*10)/10)
	}
	return out
}

func (s *logScanner) summary() *LogSummary {
	sum := &LogSummary{Count: s.count, Skipped: s.skipped, Failed: s.failed}
	if s.count > 0 {
		sum.P50 = s.hist.quantile(0.50) / 1000
		sum.P95 = s.hist.quantile(0.95) / 1000
		sum.P99 = s.hist.quantile(0.99) / 1000
		sum.MaxMS = float64(s.hist.max) / 1000
		sum.MeanMS = s.hist.sum / float64(s.hist.n) / 1000
	}
	sum.TPSSeries = s.series()
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
