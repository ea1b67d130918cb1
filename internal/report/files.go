package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// Names of the files WriteAll writes into the campaign directory, besides
// one <variant>.txt benchstat file per variant.
const (
	ResultsJSONFile = "results.json"
	ResultsCSVFile  = "results.csv"
	SummaryFile     = "summary.md"
	ChartSVGFile    = "chart.svg"
	ChartPNGFile    = "chart.png"
	ForestSVGFile   = "forest.svg"
	ForestPNGFile   = "forest.png"
	TimelineSVGFile = "timeline.svg"
	TimelinePNGFile = "timeline.png"
)

// variantFileName keeps benchstat file names inside the directory and
// free of shell surprises.
var variantFileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// WriteAll writes results.json, results.csv, summary.md, one benchstat file
// per variant (<variant>.txt) and the chart into dir. Each file is written
// to a temporary file and renamed, so a reader never sees half a file and
// an interrupted write leaves the previous version in place.
func WriteAll(dir string, r *Results) error {
	for _, v := range r.Variants {
		if !variantFileName.MatchString(v.Name) {
			return fmt.Errorf("write reports: variant name %q cannot be a file name (use letters, digits, '.', '_', '-')", v.Name)
		}
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{ResultsJSONFile, func(w io.Writer) error { return WriteJSON(w, r) }},
		{ResultsCSVFile, func(w io.Writer) error { return WriteCSV(w, r) }},
		{SummaryFile, func(w io.Writer) error { return WriteMarkdown(w, r) }},
	}
	for _, v := range r.Variants {
		name := v.Name
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{name + ".txt", func(w io.Writer) error { return WriteBenchstat(w, r, name) }})
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), 0o644, f.write); err != nil {
			return err
		}
	}
	return WriteChart(dir, r)
}

// WriteJSON writes r as indented results.json. A zero SchemaVersion is
// written as the current SchemaVersion.
func WriteJSON(w io.Writer, r *Results) error {
	out := *r
	if out.SchemaVersion == 0 {
		out.SchemaVersion = SchemaVersion
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// DecodeResults decodes a results.json document written by WriteJSON; name
// is used in errors. It refuses a document whose schema_version is missing
// or not SchemaVersion, because fields would be silently misread.
func DecodeResults(b []byte, name string) (*Results, error) {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("decode results %s: %w", name, err)
	}
	if probe.SchemaVersion == nil {
		return nil, fmt.Errorf("decode results %s: no schema_version", name)
	}
	if *probe.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("decode results %s: schema_version %d is not the supported version %d", name, *probe.SchemaVersion, SchemaVersion)
	}
	var r Results
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode results %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode results %s: %w", name, errors.New("trailing data after the document"))
	}
	return &r, nil
}

// csvHeader is the header row of results.csv; one row per run follows.
var csvHeader = []string{
	"seq", "variant", "clients", "iteration", "tps",
	"latency_avg_ms", "latency_stddev_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
	"transactions", "failed_transactions", "started_at", "seconds", "drift", "drift_pct",
	"nopm", "tpm",
}

// WriteCSV writes results.csv: a header and one row per run in run order.
// Latencies that pgbench did not provide are empty cells, not zeros, so a
// spreadsheet does not average them in.
func WriteCSV(w io.Writer, r *Results) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	for _, run := range r.Runs {
		l := run.LatencyMS
		row := []string{
			strconv.Itoa(run.Seq), run.Variant, strconv.Itoa(run.Clients), strconv.Itoa(run.Iteration),
			fmtFloat(run.TPS),
			optFloat(l.Avg), optFloat(l.Stddev), optFloat(l.P50), optFloat(l.P95), optFloat(l.P99),
			strconv.FormatInt(run.Transactions, 10), strconv.FormatInt(run.FailedTransactions, 10),
			fmtTime(run.StartedAt), fmtFloat(run.Seconds), strconv.FormatBool(run.Drift), fmtFloat(run.DriftPct),
			optFloat(run.NOPM), optFloat(run.TPM),
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func optFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return fmtFloat(v)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
