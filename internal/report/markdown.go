package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// WriteMarkdown writes summary.md: a table of every client count ready to
// paste into a pgsql-hackers mail, followed by what a reader needs to
// judge it (host, variants, workload, warnings) and the exact command that
// reproduces it.
func WriteMarkdown(w io.Writer, r *Results) error {
	var b strings.Builder
	wl := r.Workload
	title := "pgbench A/B"
	switch {
	case wl.Metric == MetricNOPM:
		title = fmt.Sprintf("TPC-C A/B: %s", plural(wl.Warehouses, "warehouse"))
	case wl.Mode != "":
		title += ": " + wl.Mode
		if wl.Scale > 0 {
			title += fmt.Sprintf(", scale %d", wl.Scale)
		}
	}
	fmt.Fprintf(&b, "# %s\n\n", mdText(title))

	names := make([]string, len(r.Variants))
	for i, v := range r.Variants {
		names[i] = v.Name
	}
	if len(names) > 0 {
		runs := plural(wl.Iterations, "iteration") + durationText(wl.DurationSeconds)
		if wl.IterationsAuto {
			runs = fmt.Sprintf("%d to %d iterations%s (each client count ran as many as an interval of ±%g%% needs)",
				wl.MinIterations, wl.MaxIterations, durationText(wl.DurationSeconds), wl.TargetCIPct)
		}
		fmt.Fprintf(&b, "Median %s of %s per variant and client count, min-max in parentheses. ", MetricLabel(wl.Metric), runs)
		if len(names) > 1 {
			b.WriteString(methodSentence(r, names[0]))
		}
		b.WriteString("\n\n")
		writeResultsTable(&b, r, names)
		writeStatisticsTable(&b, r, names)
		writeLatencyTable(&b, r, names)
		writeTPCCTables(&b, r, names)
		writeDifferedTable(&b, r)
		writeProfiles(&b, r)
		writePictures(&b, len(names) > 1)
	}

	writeHost(&b, r.Sysinfo)

	if len(r.Variants) > 0 {
		b.WriteString("\n## Variants\n\n")
		b.WriteString("| variant | version | bin dir | huge pages (requested / observed) | settings |\n")
		b.WriteString("|:--|:--|:--|:--|:--|\n")
		for _, v := range r.Variants {
			bin := "n/a"
			if v.BinDir != "" {
				bin = "`" + mdCode(v.BinDir) + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s / %s | %s |\n",
				mdCell(v.Name), mdCell(orNA(v.Version)), bin,
				mdCell(orNA(v.HugePages)), mdCell(orNA(v.HugePagesObserved)), settingsText(v.Settings))
		}
	}

	b.WriteString("\n## Workload\n\n")
	writeWorkload(&b, wl)
	if r.WallSeconds > 0 {
		fmt.Fprintf(&b, "- wall time: %s\n", humanSeconds(r.WallSeconds))
	}
	if !r.StartedAt.IsZero() {
		fmt.Fprintf(&b, "- started: %s\n", fmtTime(r.StartedAt))
	}

	WriteClosingMarkdown(&b, r.Warnings, r.Command)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeResultsTable(b *strings.Builder, r *Results, names []string) {
	base := names[0]
	cands := names[1:]
	b.WriteString("| clients |")
	for _, n := range names {
		fmt.Fprintf(b, " %s |", mdCell(n))
	}
	for _, c := range cands {
		fmt.Fprintf(b, " %s vs %s | CI | p (adjusted) | verdict |", mdCell(c), mdCell(base))
	}
	b.WriteString("\n|--:|")
	b.WriteString(strings.Repeat("--:|", len(names)))
	b.WriteString(strings.Repeat("--:|--:|--:|:--|", len(cands)))
	b.WriteString("\n")
	for _, cell := range r.Cells {
		fmt.Fprintf(b, "| %d |", cell.Clients)
		for _, n := range names {
			med, lo, hi, _, ok := figures(cell.Variants[n], r.Workload.Metric)
			if !ok {
				b.WriteString(" n/a |")
				continue
			}
			fmt.Fprintf(b, " %.1f (%.1f-%.1f) |", med, lo, hi)
		}
		for _, c := range cands {
			cmp, ok := findComparison(cell, base, c)
			if !ok {
				b.WriteString(" n/a | n/a | n/a | n/a |")
				continue
			}
			fmt.Fprintf(b, " %s | %s | %s | %s |", pct(cmp.DeltaPct), ciText(cmp), testedP(cmp, cmp.PAdjusted, r.Alpha), verdictText(cmp))
		}
		b.WriteString("\n")
	}
}

// writePictures links the pictures WriteChart writes beside summary.md.
func writePictures(b *strings.Builder, comparisons bool) {
	b.WriteString("\n## Pictures\n\n")
	fmt.Fprintf(b, "- [median by client count](%s) ([PNG](%s))\n", ChartSVGFile, ChartPNGFile)
	if comparisons {
		fmt.Fprintf(b, "- [forest plot](%s) ([PNG](%s)): each comparison's delta with its interval and the zero line\n", ForestSVGFile, ForestPNGFile)
	}
	fmt.Fprintf(b, "- [run timeline](%s) ([PNG](%s)): every run in order, per variant, where drift and outliers show\n", TimelineSVGFile, TimelinePNGFile)
}

// methodSentence names the method behind the deltas, intervals and
// verdicts in one sentence a reviewer can check.
func methodSentence(r *Results, base string) string {
	var m string
	metric := MetricLabel(r.Workload.Metric)
	switch r.Method {
	case MethodPairedT:
		m = fmt.Sprintf("Delta: geometric mean of the candidate/%s %s ratios of runs paired by iteration (the alternating order runs each pair back to back); "+
			"interval and p from a paired t test on the log ratios", mdText(base), metric)
	case MethodPairedTTwoStage:
		m = fmt.Sprintf("Delta: geometric mean of the candidate/%s %s ratios of runs paired by iteration (the alternating order runs each pair back to back); "+
			"iterations chosen per cell from its first stage to reach the target interval, interval and p from Stein's two-stage t test on the log ratios "+
			"(spread from the first stage)", mdText(base), metric)
	case MethodHodgesLehmann:
		m = fmt.Sprintf("Delta: Hodges-Lehmann shift of log %s, candidate vs %s (runs in randomized order, unpaired); "+
			"interval and p from the exact Mann-Whitney test", metric, mdText(base))
	default:
		m = "Delta: candidate vs " + mdText(base)
	}
	if r.Correction == CorrectionHolm {
		m += "; p adjusted across all comparisons of the campaign by Holm's method"
	}
	m += fmt.Sprintf("; verdict at alpha = %g, each interval at the level at which it excludes 0 exactly when the verdict is significant", r.Alpha)
	if r.Correction == CorrectionHolm {
		m += " (each holds at its own level; they are not simultaneous intervals)"
	}
	return m + "."
}

// verdictText is a comparison's verdict with what qualifies it.
func verdictText(c Comparison) string {
	switch {
	case c.Unreachable:
		return c.Verdict + " (design cannot reach significance: see warnings)"
	case !c.Tested && strings.HasPrefix(c.Note, noSpreadPrefix):
		return "none (no spread: see warnings)"
	case !c.Tested && c.Note != "":
		return c.Verdict + " (too few iterations)"
	case c.Note != "":
		return c.Verdict + " (see warnings)"
	}
	return c.Verdict
}

// testedP is a p-value of c as the tables print it: n/a without a test.
func testedP(c Comparison, p, alpha float64) string {
	if !c.Tested {
		return "n/a"
	}
	return PValueText(p, alpha)
}

// writeStatisticsTable gives what a reviewer checks behind each verdict:
// the runs used, the spread of each side, the interval's level, the raw
// and adjusted p, the smallest effect the campaign could have detected, and
// the drift across the cell's runs.
func writeStatisticsTable(b *strings.Builder, r *Results, names []string) {
	if len(names) < 2 {
		return
	}
	base := names[0]
	metric := MetricLabel(r.Workload.Metric)
	fmt.Fprintf(b, "\nStatistics: n = runs used per side (pairs when paired); CV and IQR of %s per side; "+
		"MDE = change detectable with 80%% power at this noise (noncentral t); drift = %s trend across the cell's runs.\n", metric, metric)
	if r.Correction == CorrectionHolm {
		b.WriteString("CI level differs from row to row on purpose: each interval is at the level at which it excludes 0 exactly when its Holm-adjusted p is at most alpha " +
			"(1 - alpha/(m-k+1) for the k-th smallest of m p-values); the intervals are not simultaneous, so all of them together hold the true changes less often than any one level says.\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "| clients | comparison | n | CV | IQR (%s) | CI level | p | p adjusted | MDE | drift |\n", strings.ToLower(metric))
	b.WriteString("|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, cell := range r.Cells {
		for _, cmp := range cell.Comparisons {
			bv, cv := cell.Variants[cmp.Baseline], cell.Variants[cmp.Candidate]
			mde := mdeText(cmp)
			drift := "n/a"
			if cell.DriftPctPerHour != nil {
				drift = fmt.Sprintf("%+.2f%%/h", *cell.DriftPctPerHour)
			}
			level := "n/a"
			if cmp.CILowPct != nil {
				level = fmt.Sprintf("%.4g%%", cmp.CILevel*100)
			}
			_, _, _, biqr, _ := figures(bv, r.Workload.Metric)
			_, _, _, ciqr, _ := figures(cv, r.Workload.Metric)
			fmt.Fprintf(b, "| %d | %s vs %s | %d / %d | %.2f%% / %.2f%% | %.1f / %.1f | %s | %s | %s | %s | %s |\n",
				cell.Clients, mdCell(cmp.Candidate), mdCell(base), cmp.NBaseline, cmp.NCandidate,
				bv.CV*100, cv.CV*100, biqr, ciqr, level, testedP(cmp, cmp.PValue, r.Alpha), testedP(cmp, cmp.PAdjusted, r.Alpha), mde, drift)
		}
	}
}

// figures are a variant cell's median, min, max and IQR of the figure of
// merit; ok is false when the cell has no runs.
func figures(vc VariantCell, metric string) (median, lo, hi, iqr float64, ok bool) {
	if metric == MetricNOPM {
		return vc.MedianNOPM, vc.MinNOPM, vc.MaxNOPM, vc.IQRNOPM, len(vc.NOPM) > 0
	}
	return vc.MedianTPS, vc.MinTPS, vc.MaxTPS, vc.IQRTPS, len(vc.TPS) > 0
}

// writeTPCCTables gives TPC-C's transactions per minute and its latencies
// per transaction type, then what happened to each variant's dataset.
func writeTPCCTables(b *strings.Builder, r *Results, names []string) {
	if r.Workload.Metric != MetricNOPM {
		return
	}
	b.WriteString("\nTPC-C: median TPM (completed transactions of every type per minute), then latency in ms per transaction type, median over the iterations: average / p95 / p99.\n\n| clients | transaction |")
	for _, n := range names {
		fmt.Fprintf(b, " %s |", mdCell(n))
	}
	b.WriteString("\n|--:|:--|" + strings.Repeat("--:|", len(names)) + "\n")
	for _, cell := range r.Cells {
		fmt.Fprintf(b, "| %d | TPM |", cell.Clients)
		for _, n := range names {
			fmt.Fprintf(b, " %.0f |", cell.Variants[n].MedianTPM)
		}
		b.WriteString("\n")
		for _, typ := range tpccTypes {
			fmt.Fprintf(b, "| %d | %s |", cell.Clients, typ)
			for _, n := range names {
				l, ok := cell.Variants[n].TypeLatencyMS[typ]
				if !ok {
					b.WriteString(" n/a |")
					continue
				}
				fmt.Fprintf(b, " %s / %s / %s |", msText(l.Avg), msText(l.P95), msText(l.P99))
			}
			b.WriteString("\n")
		}
	}
	t := r.Workload.TPCC
	if t == nil || len(t.Datasets) == 0 {
		return
	}
	fmt.Fprintf(b, "\nTPC-C datasets (%s): load, and the consistency conditions of clause 3.3.2 after the load and after the last run.\n\n", mdText(t.Driver))
	b.WriteString("| variant | load | size | after load | after the runs |\n|:--|--:|--:|:--|:--|\n")
	for _, n := range names {
		d, ok := t.Datasets[n]
		if !ok {
			continue
		}
		load := humanSeconds(d.LoadSeconds)
		if d.ClonedFrom != "" {
			load = "cloned from " + mdCell(d.ClonedFrom)
		}
		size := "n/a"
		if d.Bytes > 0 {
			size = fmt.Sprintf("%.0f MB", float64(d.Bytes)/(1<<20))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", mdCell(n), load, size, checkText(d.LoadCheck), checkText(d.FinalCheck))
	}
}

// tpccTypes are TPC-C's transaction types in the order reports list them.
var tpccTypes = []string{"new_order", "payment", "order_status", "delivery", "stock_level"}

func checkText(c *ConsistencyCheck) string {
	switch {
	case c == nil:
		return "n/a"
	case c.Passed:
		return fmt.Sprintf("%d conditions hold", len(c.Conditions))
	}
	return "FAILED: " + mdCell(strings.Join(c.Failures, "; "))
}

// writeLatencyTable shows the latencies behind the TPS numbers, which
// often explain a throughput difference (or its absence). It is left out
// when pgbench gave no latencies at all.
func writeLatencyTable(b *strings.Builder, r *Results, names []string) {
	have := false
	for _, cell := range r.Cells {
		for _, vc := range cell.Variants {
			if vc.LatencyMS != (Latency{}) {
				have = true
			}
		}
	}
	if !have {
		return
	}
	b.WriteString("\nLatency in ms, median over the iterations: average / p95 / p99.\n\n| clients |")
	for _, n := range names {
		fmt.Fprintf(b, " %s |", mdCell(n))
	}
	b.WriteString("\n|--:|" + strings.Repeat("--:|", len(names)) + "\n")
	for _, cell := range r.Cells {
		fmt.Fprintf(b, "| %d |", cell.Clients)
		for _, n := range names {
			l := cell.Variants[n].LatencyMS
			fmt.Fprintf(b, " %s / %s / %s |", msText(l.Avg), msText(l.P95), msText(l.P99))
		}
		b.WriteString("\n")
	}
}

func msText(v float64) string {
	switch {
	case v == 0:
		return "n/a"
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	case v < 100:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func findComparison(cell Cell, base, cand string) (Comparison, bool) {
	for _, c := range cell.Comparisons {
		if c.Baseline == base && c.Candidate == cand {
			return c, true
		}
	}
	return Comparison{}, false
}

func pct(v float64) string { return fmt.Sprintf("%+.2f%%", v) }

// signedPct prints a percentage with as many decimals as it takes for
// the printed figure to keep the value's sign: an interval end of +0.004%
// prints as +0.004%, not +0.00%, so an interval that excludes 0 reads so.
func signedPct(v float64) string {
	if v == 0 {
		return pct(0)
	}
	for d := 2; d <= 6; d++ {
		s := strconv.FormatFloat(v, 'f', d, 64)
		if x, _ := strconv.ParseFloat(s, 64); x != 0 {
			return fmt.Sprintf("%+.*f%%", d, v)
		}
	}
	return fmt.Sprintf("%+.2g%%", v)
}

func ciText(c Comparison) string {
	if c.CILowPct == nil || c.CIHighPct == nil {
		return "n/a"
	}
	return signedPct(*c.CILowPct) + " .. " + signedPct(*c.CIHighPct)
}

// mdeText is a comparison's minimum detectable effect as the tables print
// it: "unreachable" when the design cannot call any change.
func mdeText(c Comparison) string {
	switch {
	case c.Unreachable:
		return "unreachable"
	case c.MDEPct == nil:
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", *c.MDEPct)
}

// PValueText prints a p-value with as many significant digits as it takes
// to show on which side of alpha it lies: 0.0504 prints as 0.0504, not
// 0.050, at alpha 0.05; below 0.001 (and alpha) it prints as <0.001.
func PValueText(p, alpha float64) string {
	if p < 0.001 && alpha >= 0.001 {
		return "<0.001"
	}
	for d := 3; d <= 8; d++ {
		s := strconv.FormatFloat(p, 'g', d, 64)
		x, _ := strconv.ParseFloat(s, 64)
		if (x <= alpha) == (p <= alpha) && (x != alpha || p == alpha) {
			return s
		}
	}
	return strconv.FormatFloat(p, 'g', -1, 64)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func durationText(s float64) string {
	if s <= 0 {
		return ""
	}
	return " of " + humanSeconds(s)
}

func humanSeconds(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%.0f s (%.1f h)", s, s/3600)
	case s >= 120:
		return fmt.Sprintf("%.0f s (%.1f min)", s, s/60)
	case s == math.Trunc(s):
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

func writeWorkload(b *strings.Builder, wl Workload) {
	item := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "- %s: %s\n", k, v)
		}
	}
	item("mode", mdText(wl.Mode))
	if wl.Script != "" {
		item("script", "`"+mdCode(wl.Script)+"`")
	}
	if wl.Warehouses > 0 {
		item("warehouses", fmt.Sprint(wl.Warehouses))
	} else if wl.Scale > 0 {
		item("scale", fmt.Sprint(wl.Scale))
	}
	if len(wl.Clients) > 0 {
		cs := make([]string, len(wl.Clients))
		for i, c := range wl.Clients {
			cs[i] = fmt.Sprint(c)
		}
		item("clients", strings.Join(cs, ", "))
	}
	item("threads", mdText(wl.Threads))
	if wl.DurationSeconds > 0 {
		item("duration", humanSeconds(wl.DurationSeconds))
	}
	switch {
	case wl.IterationsAuto:
		item("iterations", fmt.Sprintf("auto: %d first, at most %d, target interval ±%g%%", wl.MinIterations, wl.MaxIterations, wl.TargetCIPct))
	case wl.Iterations > 0:
		item("iterations", fmt.Sprint(wl.Iterations))
	}
	item("protocol", mdText(wl.Protocol))
	if wl.WarmupSeconds > 0 {
		item("warmup", humanSeconds(wl.WarmupSeconds))
	}
	if wl.CheckpointBefore {
		item("checkpoint before each run", "yes")
	}
	item("server restarts", mdText(wl.Restart))
	if wl.Order != "" {
		order := mdText(wl.Order)
		if wl.Order == "randomized" {
			order += fmt.Sprintf(" (seed %d)", wl.Seed)
		}
		item("order", order)
	}
	if wl.ServerNUMA != "" {
		item("server pinning", "`"+mdCode(numactlCommand(wl.ServerNUMA))+"`")
	}
	if wl.ClientNUMA != "" {
		item("client pinning", "`"+mdCode(numactlCommand(wl.ClientNUMA))+"`")
	}
}

// numactlCommand renders a pinning spec ("cpunodebind=0,membind=0") as the
// numactl command it stands for, one --key=value flag per option; a comma
// followed by a digit continues a list (physcpubind=1,3).
func numactlCommand(spec string) string {
	var opts []string
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if len(opts) > 0 && p != "" && p[0] >= '0' && p[0] <= '9' {
			opts[len(opts)-1] += "," + p
			continue
		}
		opts = append(opts, p)
	}
	cmd := "numactl"
	for _, o := range opts {
		if o != "" {
			cmd += " --" + o
		}
	}
	return cmd
}

// writeHost prints the host facts that most often explain a difference.
// Sysinfo is kept as a generic document, so it is read back through JSON
// and only the keys present are printed.
func writeHost(b *strings.Builder, sysinfo any) {
	if sysinfo == nil {
		return
	}
	raw, err := json.Marshal(sysinfo)
	if err != nil {
		return
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return
	}
	var lines []string
	add := func(k, v string) {
		if v != "" {
			lines = append(lines, fmt.Sprintf("- %s: %s", k, mdText(v)))
		}
	}
	add("kernel", str(m["kernel"]))
	add("os", str(m["os"]))
	add("cpu model", str(m["cpu_model"]))
	cpus := str(m["cpus"])
	if cpus != "" {
		var extra []string
		for _, k := range []struct{ key, word string }{{"sockets", "socket"}, {"cores", "core"}, {"threads_per_core", "thread"}} {
			if n, ok := m[k.key].(float64); ok && n > 0 {
				w := plural(int(n), k.word)
				if k.key == "threads_per_core" {
					w += " per core"
				}
				extra = append(extra, w)
			}
		}
		if len(extra) > 0 {
			cpus += " (" + strings.Join(extra, ", ") + ")"
		}
	}
	add("cpus", cpus)
	switch nodes := m["numa_nodes"].(type) {
	case []any:
		add("numa nodes", fmt.Sprint(len(nodes)))
	case nil:
	default:
		add("numa nodes", str(nodes))
	}
	if mem, ok := m["memory_total_bytes"].(float64); ok && mem > 0 {
		add("memory", fmt.Sprintf("%.1f GiB", mem/(1<<30)))
	} else {
		add("memory", str(m["memory"]))
	}
	add("governor", str(m["governor"]))
	add("numa_balancing", str(m["numa_balancing"]))
	add("transparent huge pages", str(m["thp"]))
	if pools, ok := m["hugepages"].([]any); ok {
		var ps []string
		for _, p := range pools {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			size, _ := pm["size_bytes"].(float64)
			ps = append(ps, fmt.Sprintf("%s: %s total, %s free, %s reserved",
				bytesText(size), str(pm["total"]), str(pm["free"]), str(pm["reserved"])))
		}
		add("huge pages", strings.Join(ps, "; "))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\n## Host\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n")
}

func bytesText(n float64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%g GiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%g MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%g KiB", n/(1<<10))
	}
	return fmt.Sprintf("%g B", n)
}

// str prints a scalar from a decoded JSON document; other kinds are empty.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmtFloat(v)
	case bool:
		return fmt.Sprint(v)
	}
	return ""
}

func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return "defaults"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "`" + mdCode(k+"="+s[k]) + "`"
	}
	return strings.Join(parts, " ")
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// mdText keeps free text from breaking the layout: one line, no table
// separators.
func mdText(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

func mdCell(s string) string { return mdText(s) }

// mdCode is for text inside backticks, where a backtick would end the span.
func mdCode(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(oneLine(s), "`", "'"), "|", `\|`)
}
