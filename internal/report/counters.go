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

// CounterDiff is one counter whose per-variant medians differ between the
// two sides of a comparison.
type CounterDiff struct {
	// Name is the counter's name, with "/tx" when it is normalized per
	// transaction (see PerTransaction).
	Name      string  `json:"name"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Ratio is Candidate / Baseline, kept finite when one side is 0 (see
	// counterRatio).
	Ratio float64 `json:"ratio"`
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

// MaxDiffered is how many counters a comparison lists as differing most.
const MaxDiffered = 12

// MinDifferedPct is the smallest change of a counter's median the
// comparisons list.
const MinDifferedPct = 1.0

// differed ranks the counters both sides have by how far apart their
// medians are, as the absolute log of their ratio, largest first.
func differed(base, cand map[string]float64, n int) []CounterDiff {
	var out []CounterDiff
	for k, b := range base {
		c, ok := cand[k]
		if !ok || (b == 0 && c == 0) {
			continue
		}
		r := counterRatio(b, c)
		if math.Abs(math.Log(r)) < math.Log(1+MinDifferedPct/100) {
			continue
		}
		out = append(out, CounterDiff{Name: k, Baseline: b, Candidate: c, Ratio: r})
	}
	score := func(d CounterDiff) float64 { return math.Abs(math.Log(d.Ratio)) }
	slices.SortFunc(out, func(x, y CounterDiff) int {
		if s := cmp.Compare(score(y), score(x)); s != 0 {
			return s
		}
		return strings.Compare(x.Name, y.Name)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// counterRatio is c / b. A side at 0 is taken as 0.1% of the other, so 0
// against anything is 1001× (or its inverse): a counter that appears
// ranks high without an infinite ratio, below a measured change that is
// larger still.
func counterRatio(b, c float64) float64 {
	b, c = math.Abs(b), math.Abs(c)
	if b == 0 || c == 0 {
		f := 1e-3 * max(b, c)
		return (c + f) / (b + f)
	}
	return c / b
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

// writeDifferedTable lists, per comparison, the counters whose medians
// differ most between its variants: the first place to look for why.
func writeDifferedTable(b *strings.Builder, r *Results) {
	have := false
	for _, cell := range r.Cells {
		for _, c := range cell.Comparisons {
			have = have || len(c.Differed) > 0
		}
	}
	if !have {
		return
	}
	b.WriteString("\n## What differed\n\nCounters whose medians differ most between the variants (per transaction where marked /tx; wait events as the share of sampled active backends).\n")
	for _, cell := range r.Cells {
		for _, c := range cell.Comparisons {
			if len(c.Differed) == 0 {
				continue
			}
			fmt.Fprintf(b, "\n%d clients, %s vs %s:\n\n| counter | source | %s | %s | ratio |\n|:--|:--|--:|--:|--:|\n",
				cell.Clients, mdCell(c.Candidate), mdCell(c.Baseline), mdCell(c.Baseline), mdCell(c.Candidate))
			for _, d := range c.Differed {
				fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", mdCode(d.Name), CounterSource(d.Name), counterText(d.Baseline), counterText(d.Candidate), ratioText(d.Ratio))
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
