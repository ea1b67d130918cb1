package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteBenchstat writes the runs of one variant in the Go benchmark format
// that benchstat reads, one line per iteration:
//
//	BenchmarkPgbench/mode=select-only/clients=16 1 12345.6 tps
//
// so that `benchstat stock.txt patched.txt` compares variants cell by cell.
// The configuration lines are the same for every variant on purpose:
// benchstat splits tables on configuration keys that differ, and the
// variant is already the file name.
func WriteBenchstat(w io.Writer, r *Results, variant string) error {
	found := false
	for _, v := range r.Variants {
		if v.Name == variant {
			found = true
			break
		}
	}
	if !found {
		return fmt.Errorf("write benchstat: unknown variant %q", variant)
	}
	wl := r.Workload
	var b strings.Builder
	cfg := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, oneLine(v))
		}
	}
	cfg("pgbench-mode", wl.Mode)
	if wl.Scale > 0 {
		cfg("pgbench-scale", strconv.Itoa(wl.Scale))
	}
	if wl.DurationSeconds > 0 {
		cfg("pgbench-duration", fmtFloat(wl.DurationSeconds)+"s")
	}
	cfg("pgbench-protocol", wl.Protocol)
	cfg("pgbench-threads", wl.Threads)
	mode := nameValue(wl.Mode)
	if mode == "" {
		mode = "unknown"
	}
	// Order lines by client count, then run order, so the file reads like
	// the table.
	runs := slices.Clone(r.Runs)
	slices.SortStableFunc(runs, func(a, b Run) int {
		if a.Clients != b.Clients {
			return a.Clients - b.Clients
		}
		return a.Seq - b.Seq
	})
	for _, run := range runs {
		if run.Variant != variant {
			continue
		}
		if wl.Metric == MetricNOPM {
			fmt.Fprintf(&b, "BenchmarkTPCC/warehouses=%d/clients=%d 1 %s nopm %s tpm\n", wl.Warehouses, run.Clients,
				strconv.FormatFloat(run.NOPM, 'f', -1, 64), strconv.FormatFloat(run.TPM, 'f', -1, 64))
			continue
		}
		fmt.Fprintf(&b, "BenchmarkPgbench/mode=%s/clients=%d 1 %s tps\n", mode, run.Clients, strconv.FormatFloat(run.TPS, 'f', -1, 64))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nameValue makes v usable inside a benchmark name, which ends at the
// first space and uses '/' and '=' as separators.
func nameValue(v string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', '/', '=':
			return '_'
		}
		return r
	}, v)
}

func oneLine(v string) string {
	return strings.Join(strings.Fields(v), " ")
}
