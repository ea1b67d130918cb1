package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Samples are TPS values read from a file, grouped by benchmark name in
// the order the names first appear. A plain file (one number per line) has
// one group with an empty name.
type Samples struct {
	Names  []string
	Values map[string][]float64
}

// ParseSamples reads TPS samples: either one number per line, or the Go
// benchmark format benchstat reads (`BenchmarkName 1 12345.6 tps`, as
// pgbench-runner's <variant>.txt files are), where the value is the one
// whose unit is tps (or the first value when no unit is tps) and lines
// such as `key: value` or `PASS` are configuration or noise. Blank lines
// and lines starting with # are skipped. A value must be a positive finite
// number; anything else is an error naming the line.
func ParseSamples(r io.Reader) (*Samples, error) {
	s := &Samples{Values: map[string][]float64{}}
	add := func(name string, v float64) {
		if _, ok := s.Values[name]; !ok {
			s.Names = append(s.Names, name)
		}
		s.Values[name] = append(s.Values[name], v)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
			continue
		case strings.HasPrefix(text, "Benchmark"):
			name, v, err := benchmarkLine(text)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			add(name, v)
		case isConfigLine(text) || text == "PASS" || strings.HasPrefix(text, "ok ") || strings.HasPrefix(text, "goos:"):
			continue
		default:
			v, err := sampleValue(text)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			add("", v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.Names) == 0 {
		return nil, errors.New("no samples: want one TPS value per line, or benchmark lines like `BenchmarkPgbench/clients=16 1 12345.6 tps`")
	}
	if len(s.Names) > 1 && slices.Contains(s.Names, "") {
		return nil, errors.New("plain values mixed with benchmark lines: use one format per file")
	}
	return s, nil
}

// benchmarkLine parses `BenchmarkName N value unit [value unit ...]`.
func benchmarkLine(text string) (string, float64, error) {
	f := strings.Fields(text)
	if len(f) < 4 || len(f)%2 != 0 {
		return "", 0, fmt.Errorf("benchmark line %q: want `BenchmarkName iterations value unit`", text)
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return "", 0, fmt.Errorf("benchmark line %q: iteration count %q is not a number", text, f[1])
	}
	idx := 2
	for i := 2; i+1 < len(f); i += 2 {
		if f[i+1] == "tps" {
			idx = i
			break
		}
	}
	v, err := sampleValue(f[idx])
	if err != nil {
		return "", 0, fmt.Errorf("benchmark line %q: %w", text, err)
	}
	return f[0], v, nil
}

// isConfigLine is benchstat's `key: value` configuration line.
func isConfigLine(text string) bool {
	k, _, ok := strings.Cut(text, ":")
	return ok && k != "" && !strings.ContainsAny(k, " \t")
}

func sampleValue(text string) (float64, error) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", text)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("%q is not a positive TPS value", text)
	}
	return v, nil
}

// SampleComparison is one comparison of two sample files, for a benchmark
// name present in both: the same fields as a comparison in results.json.
type SampleComparison struct {
	Name string `json:"name,omitempty"`
	Comparison
}

// SampleResults is what `pgbench-runner compare --baseline --candidate`
// reports.
type SampleResults struct {
	Alpha       float64            `json:"alpha"`
	Method      string             `json:"method"`
	Correction  string             `json:"correction"`
	Comparisons []SampleComparison `json:"comparisons"`
	Warnings    []string           `json:"warnings,omitempty"`
}

// CompareSamples compares candidate with baseline for every name both
// have, paired by position (an.Paired) or unpaired, with the correction
// across the names. Names in only one file are an error; so are unequal
// lengths when paired, and fewer runs than the method needs.
func CompareSamples(baseline, candidate *Samples, an Analysis) (*SampleResults, error) {
	var names []string
	for _, n := range baseline.Names {
		if _, ok := candidate.Values[n]; !ok {
			return nil, fmt.Errorf("%s is in the baseline but not in the candidate", sampleName(n))
		}
		names = append(names, n)
	}
	for _, n := range candidate.Names {
		if _, ok := baseline.Values[n]; !ok {
			return nil, fmt.Errorf("%s is in the candidate but not in the baseline", sampleName(n))
		}
	}
	variants := []Variant{{Name: "baseline"}, {Name: "candidate"}}
	var runs []Run
	clients := make([]int, len(names))
	for i, n := range names {
		clients[i] = i + 1
		b, c := baseline.Values[n], candidate.Values[n]
		switch {
		case an.Paired && len(b) != len(c):
			return nil, fmt.Errorf("%s: %d baseline values and %d candidate values: --paired pairs them by line, so the counts must be equal", sampleName(n), len(b), len(c))
		case an.Paired && len(b) < MinPairs:
			return nil, fmt.Errorf("%s: %d pairs, a paired comparison needs at least %d", sampleName(n), len(b), MinPairs)
		case !an.Paired && (len(b) < MinPerSide || len(c) < MinPerSide):
			return nil, fmt.Errorf("%s: %d baseline and %d candidate values, an unpaired comparison needs at least %d of each", sampleName(n), len(b), len(c), MinPerSide)
		}
		for j, v := range b {
			runs = append(runs, Run{Seq: len(runs) + 1, Variant: "baseline", Clients: i + 1, Iteration: j + 1, TPS: v})
		}
		for j, v := range c {
			runs = append(runs, Run{Seq: len(runs) + 1, Variant: "candidate", Clients: i + 1, Iteration: j + 1, TPS: v})
		}
	}
	cells, warnings, err := Summarize(variants, clients, runs, an)
	if err != nil {
		return nil, err
	}
	out := &SampleResults{Alpha: an.Alpha, Method: an.Method(), Correction: an.CorrectionName(), Comparisons: []SampleComparison{}}
	for i, cell := range cells {
		for _, cmp := range cell.Comparisons {
			out.Comparisons = append(out.Comparisons, SampleComparison{Name: names[i], Comparison: cmp})
		}
	}
	// Summarize's warnings name cells by a client count these files do not
	// have; keep only those that do not.
	for _, w := range warnings {
		if !strings.HasPrefix(w, "clients=") {
			out.Warnings = append(out.Warnings, w)
		}
	}
	return out, nil
}

func sampleName(n string) string {
	if n == "" {
		return "the samples"
	}
	return n
}

// WriteSampleComparisons prints the comparisons as a Markdown table.
func WriteSampleComparisons(w io.Writer, r *SampleResults) error {
	var b strings.Builder
	b.WriteString("| benchmark | n | candidate vs baseline | CI (level) | p | p adjusted | MDE | verdict |\n")
	b.WriteString("|:--|--:|--:|--:|--:|--:|--:|:--|\n")
	for _, c := range r.Comparisons {
		name := c.Name
		if name == "" {
			name = "samples"
		}
		ci := ciText(c.Comparison)
		if c.CILowPct != nil {
			ci += fmt.Sprintf(" (%.4g%%)", c.CILevel*100)
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %s | %s | %s | %s | %s | %s |\n", mdCell(name), c.NBaseline, c.NCandidate,
			pct(c.DeltaPct), ci, testedP(c.Comparison, c.PValue, r.Alpha), testedP(c.Comparison, c.PAdjusted, r.Alpha), mdeText(c.Comparison), verdictText(c.Comparison))
	}
	fmt.Fprintf(&b, "\nMethod: %s; correction: %s; alpha %g; each interval at the level at which it excludes 0 exactly when its adjusted p is at most alpha (not simultaneous intervals).\n", r.Method, r.Correction, r.Alpha)
	for _, c := range r.Comparisons {
		if c.Note != "" {
			fmt.Fprintf(&b, "\nNote, %s: %s\n", mdText(sampleName(c.Name)), mdText(c.Note))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
