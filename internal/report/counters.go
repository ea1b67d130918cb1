package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// ClientCPU is pgbench's own CPU use over a run, next to what it may use:
// the evidence behind Run.ClientBound.
type ClientCPU struct {
	// CPUSeconds is user plus system time of the pgbench process.
	CPUSeconds  float64 `json:"cpu_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	// Threads is pgbench's -j; AllowedCPUs what the process could use at
	// most: the least of Threads, the CPUs of its affinity mask and its
	// cgroup's CPU quota.
	Threads     int     `json:"threads"`
	AllowedCPUs float64 `json:"allowed_cpus"`
	// Share is CPUSeconds / (WallSeconds * AllowedCPUs).
	Share float64 `json:"share"`
}

// ClientBoundShare is the share of its allowed CPU at which a run's client
// counts as saturated: from there on the run may measure pgbench, not the
// server.
const ClientBoundShare = 0.9

// CounterDiff is one counter that differs between the two sides of a
// comparison: Baseline and Candidate are its medians over each side's runs.
type CounterDiff struct {
	// Name is the counter's name, with "/tx" when it is normalized per
	// transaction (see PerTransaction).
	Name      string  `json:"name"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Ratio is the estimated ratio of the candidate's counter to the
	// baseline's (the geometric mean of the pairs' ratios when paired), and
	// RatioLow and RatioHigh its interval, at the level that agrees with
	// PAdjusted (the p-value corrected across every counter of the
	// campaign). A counter that is 0 in some runs is offset by a thousandth
	// of its largest value, so the ratio stays finite.
	Ratio     float64 `json:"ratio"`
	RatioLow  float64 `json:"ratio_low"`
	RatioHigh float64 `json:"ratio_high"`
	PAdjusted float64 `json:"p_adjusted"`
}

// CounterSource names where a counter comes from, by its prefix.
func CounterSource(name string) string {
	switch {
	case strings.HasPrefix(name, "pg."):
		return "PostgreSQL"
	case strings.HasPrefix(name, "wait."):
		return "wait events"
	case strings.HasPrefix(name, "client."):
		return "client"
	case strings.HasPrefix(name, "client_host."):
		return "client host's OS"
	}
	return "OS"
}

// PerTransaction says whether a counter is compared per transaction: every
// count and time is (blocks read per transaction, not per run, is what
// stays comparable between variants of different TPS), shares of samples
// are not.
func PerTransaction(name string) bool {
	return !strings.HasPrefix(name, "wait.") && !strings.HasPrefix(name, "client.")
}

// comparedCounters are the counters of one run as the comparisons see
// them: counts per transaction, shares as they are, the bookkeeping of the
// sampler left out.
func comparedCounters(r Run) map[string]float64 {
	if len(r.Counters) == 0 {
		return nil
	}
	out := make(map[string]float64, len(r.Counters))
	for k, v := range r.Counters {
		switch {
		case k == "wait.samples" || k == "wait.ticks":
		case PerTransaction(k):
			if r.Transactions > 0 {
				out[k+"/tx"] = v / float64(r.Transactions)
			}
		default:
			out[k] = v
		}
	}
	if r.Client != nil {
		out["client.cpu_share"] = r.Client.Share
	}
	return out
}

// counterMedians is the median of each counter over the runs that have it,
// raw and as compared.
func counterMedians(rs []Run) (raw, compared map[string]float64) {
	collect := func(get func(Run) map[string]float64) map[string]float64 {
		by := map[string][]float64{}
		for _, r := range rs {
			for k, v := range get(r) {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					by[k] = append(by[k], v)
				}
			}
		}
		if len(by) == 0 {
			return nil
		}
		m := make(map[string]float64, len(by))
		for k, xs := range by {
			m[k] = stats.Sample{Xs: xs}.Quantile(0.5)
		}
		return m
	}
	return collect(func(r Run) map[string]float64 { return r.Counters }), collect(comparedCounters)
}

// MaxDiffered is how many counters a comparison lists as differing.
const MaxDiffered = 12

// counterTest is one counter of one comparison, tested across the runs.
type counterTest struct {
	cell, idx int // cells[cell].Comparisons[idx]
	name      string
	inf       inference
}

// compareCounters fills each comparison's Differed: every counter both
// sides have is tested across the runs (paired by iteration when the
// analysis is, as the figure of merit is: a paired t test on the log
// ratios; a Welch t test on the logs otherwise), the p-values of all
// counters of all comparisons of the campaign are corrected together by
// Holm's method, and only the counters whose corrected p is at most alpha
// are listed, largest change first, each with its interval at the level
// that agrees with its corrected p. A counter whose runs do not vary (or
// that is 0 everywhere) has no test and is not listed.
func compareCounters(cells []Cell, byCell []map[string][]Run, an Analysis) {
	var tests []counterTest
	for i := range cells {
		for j := range cells[i].Comparisons {
			cmp := &cells[i].Comparisons[j]
			base, cand := runCounters(byCell[i][cmp.Baseline]), runCounters(byCell[i][cmp.Candidate])
			for _, name := range sharedCounters(base, cand) {
				inf, ok := testCounter(base, cand, name, an.Paired)
				if !ok {
					continue
				}
				cmp.CountersTested++
				tests = append(tests, counterTest{cell: i, idx: j, name: name, inf: inf})
			}
		}
	}
	ps := make([]float64, len(tests))
	for i, t := range tests {
		ps[i] = t.inf.p
	}
	adjusted := holm(ps)
	for i, t := range tests {
		if adjusted[i] > an.Alpha {
			continue
		}
		cmp := &cells[t.cell].Comparisons[t.idx]
		g := levelFor(an.Alpha, t.inf.p, adjusted[i], len(ps))
		lo, hi, _ := t.inf.interval(g)
		bv, cv := cells[t.cell].Variants[cmp.Baseline], cells[t.cell].Variants[cmp.Candidate]
		cmp.Differed = append(cmp.Differed, CounterDiff{Name: t.name,
			Baseline: bv.CountersCompared[t.name], Candidate: cv.CountersCompared[t.name],
			Ratio: math.Exp(t.inf.shift), RatioLow: math.Exp(lo), RatioHigh: math.Exp(hi), PAdjusted: adjusted[i]})
	}
	for i := range cells {
		for j := range cells[i].Comparisons {
			d := cells[i].Comparisons[j].Differed
			score := func(d CounterDiff) float64 { return math.Abs(math.Log(d.Ratio)) }
			slices.SortFunc(d, func(x, y CounterDiff) int {
				if s := cmp.Compare(score(y), score(x)); s != 0 {
					return s
				}
				return strings.Compare(x.Name, y.Name)
			})
			if len(d) > MaxDiffered {
				cells[i].Comparisons[j].Differed = d[:MaxDiffered]
			}
		}
	}
}

// iterCounters are one run's compared counters (comparedCounters) and its
// iteration, which pairs it.
type iterCounters struct {
	iteration int
	values    map[string]float64
}

// runCounters gives each run's compared counters, in iteration order.
func runCounters(rs []Run) []iterCounters {
	out := make([]iterCounters, len(rs))
	for i, r := range rs {
		out[i] = iterCounters{r.Iteration, comparedCounters(r)}
	}
	slices.SortStableFunc(out, func(x, y iterCounters) int { return x.iteration - y.iteration })
	return out
}

// sharedCounters are the counters that runs of both sides have, sorted.
func sharedCounters(base, cand []iterCounters) []string {
	has := func(rs []iterCounters) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			for k := range r.values {
				m[k] = true
			}
		}
		return m
	}
	hb, hc := has(base), has(cand)
	var out []string
	for k := range hb {
		if hc[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// testCounter tests one counter between the runs of two variants, on the
// log of its values. A counter that is 0 in some runs is offset by a
// thousandth of its largest value first, so that appearing or vanishing
// is a large finite change. ok is false when the counter has no test: too
// few runs, a negative value, or no spread.
func testCounter(base, cand []iterCounters, name string, paired bool) (inference, bool) {
	var a, b []float64
	if paired {
		byIter := map[int]float64{}
		for _, r := range base {
			if v, ok := r.values[name]; ok {
				byIter[r.iteration] = v
			}
		}
		for _, r := range cand {
			v, ok := r.values[name]
			if x, okb := byIter[r.iteration]; ok && okb {
				a, b = append(a, x), append(b, v)
			}
		}
	} else {
		for _, r := range base {
			if v, ok := r.values[name]; ok {
				a = append(a, v)
			}
		}
		for _, r := range cand {
			if v, ok := r.values[name]; ok {
				b = append(b, v)
			}
		}
	}
	largest := 0.0
	for _, v := range slices.Concat(a, b) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return inference{}, false
		}
		largest = max(largest, v)
	}
	if largest == 0 {
		return inference{}, false
	}
	off := 0.0
	if slices.Contains(a, 0) || slices.Contains(b, 0) {
		off = 1e-3 * largest
	}
	shift := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x + off
		}
		return out
	}
	var inf inference
	if paired {
		inf = pairedLogT(shift(a), shift(b), 0)
	} else {
		inf = welchLogT(shift(a), shift(b))
	}
	return inf, inf.ok
}

// clientBoundRuns counts the runs whose client was saturated.
func clientBoundRuns(rs []Run) int {
	n := 0
	for _, r := range rs {
		if r.ClientBound {
			n++
		}
	}
	return n
}

// writeDifferedTable lists, per comparison, the counters that differ
// between its variants by a test across the runs: the first place to look
// for why. A comparison whose counters were tested and none differs says
// so in one sentence.
func writeDifferedTable(b *strings.Builder, r *Results) {
	have := false
	for _, cell := range r.Cells {
		for _, c := range cell.Comparisons {
			have = have || c.CountersTested > 0
		}
	}
	if !have {
		return
	}
	test := "a Welch t test on the log of each counter"
	if r.Method != MethodHodgesLehmann {
		test = "a paired t test on the log ratios of each counter across the paired runs"
	}
	fmt.Fprintf(b, "\n## What differed\n\nCounters that differ between the variants by %s, with Holm's correction across every counter of the campaign at alpha = %g; "+
		"the ratio is candidate over baseline with its interval, medians per side (per transaction where marked /tx; wait events as the share of sampled active backends).\n", test, r.Alpha)
	for _, cell := range r.Cells {
		for _, c := range cell.Comparisons {
			if c.CountersTested == 0 {
				continue
			}
			if len(c.Differed) == 0 {
				fmt.Fprintf(b, "\n%d clients, %s vs %s: none of the %d counters compared differs.\n", cell.Clients, mdCell(c.Candidate), mdCell(c.Baseline), c.CountersTested)
				continue
			}
			fmt.Fprintf(b, "\n%d clients, %s vs %s (%d of %d counters differ):\n\n| counter | source | %s | %s | ratio | interval | p adjusted |\n|:--|:--|--:|--:|--:|--:|--:|\n",
				cell.Clients, mdCell(c.Candidate), mdCell(c.Baseline), len(c.Differed), c.CountersTested, mdCell(c.Baseline), mdCell(c.Candidate))
			for _, d := range c.Differed {
				fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s .. %s | %s |\n", mdCode(d.Name), CounterSource(d.Name), counterText(d.Baseline), counterText(d.Candidate),
					ratioText(d.Ratio), ratioText(d.RatioLow), ratioText(d.RatioHigh), PValueText(d.PAdjusted, r.Alpha))
			}
		}
	}
}

func counterText(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e6:
		return fmt.Sprintf("%.3g", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func ratioText(r float64) string {
	if r >= 100 || r <= 0.01 {
		return fmt.Sprintf("%.3g×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

// writeProfiles says how the server was profiled and where the profiles
// and differential flame graphs are.
func writeProfiles(b *strings.Builder, r *Results) {
	wl := r.Workload
	if wl.Profile == "" || wl.Profile == "none" {
		return
	}
	b.WriteString("\n## Profiles\n\n")
	fmt.Fprintf(b, "perf record of the server's processes (mode %s, call stacks unwound with %s). ", wl.Profile, unwindText(wl.Unwind))
	if wl.Profile == "every-run" {
		b.WriteString("Every measured run was profiled, so all of them are in the statistics, each slowed by the profiling alike.")
	} else {
		b.WriteString("One extra run per variant and client count was profiled; those runs are left out of the statistics.")
		if wl.ProfileOverheadPct != nil {
			fmt.Fprintf(b, " The profiled runs ran %s against the median of the unprofiled runs of their variant and client count.", pct(*wl.ProfileOverheadPct))
		}
	}
	b.WriteString(" Compare two with `go tool pprof -http : -diff_base BASE.pb.gz CANDIDATE.pb.gz`; a flame graph's widths are the candidate's samples, red frames grew against the baseline, blue ones shrank.\n\n")
	b.WriteString("| clients | variant | profile | flame graph vs baseline |\n|--:|:--|:--|:--|\n")
	for _, cell := range r.Cells {
		for _, v := range r.Variants {
			vc := cell.Variants[v.Name]
			if vc.Profile == "" {
				continue
			}
			fg := ""
			for _, c := range cell.Comparisons {
				if c.Candidate == v.Name && c.FlameGraph != "" {
					fg = "`" + mdCode(c.FlameGraph) + "`"
				}
			}
			fmt.Fprintf(b, "| %d | %s | `%s` | %s |\n", cell.Clients, mdCell(v.Name), mdCode(vc.Profile), fg)
		}
	}
}

func unwindText(u string) string {
	switch u {
	case "fp":
		return "frame pointers"
	case "dwarf":
		return "DWARF (the build has no frame pointers)"
	case "":
		return "an unrecorded method"
	}
	return u
}
