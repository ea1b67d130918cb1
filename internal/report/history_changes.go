package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/changepoint"
)

// SeriesKey names a series of comparisons whose delta can be followed
// night after night: one class of host, one workload, one pair of variant
// names. Comparisons of one series differ only in when they ran (and in
// the builds, which is the point).
type SeriesKey struct {
	Host            string  `json:"host"`
	Mode            string  `json:"mode"`
	Scale           int     `json:"scale"`
	Clients         int     `json:"clients"`
	DurationSeconds float64 `json:"duration_seconds"`
	Protocol        string  `json:"protocol"`
	Baseline        string  `json:"baseline"`
	Candidate       string  `json:"candidate"`
}

// Class names the kind of host: its instance type, else its CPU model and
// CPU count, so that two machines of one kind share a series.
func (h HistoryHost) Class() string {
	if h.InstanceType != "" {
		return h.InstanceType
	}
	model := strings.Join(strings.Fields(h.CPUModel), " ")
	if model == "" {
		model = "unknown CPU"
	}
	return fmt.Sprintf("%s x %d", model, h.CPUs)
}

// Key returns the series the entry belongs to.
func (e HistoryEntry) Key() SeriesKey {
	return SeriesKey{Host: e.Host.Class(), Mode: e.Workload.Mode, Scale: e.Workload.Scale, Clients: e.Workload.Clients,
		DurationSeconds: e.Workload.DurationSeconds, Protocol: e.Workload.Protocol, Baseline: e.Baseline.Name, Candidate: e.Candidate.Name}
}

// SeriesPoint is one comparison as change detection sees it.
type SeriesPoint struct {
	Key        SeriesKey
	Campaign   string
	RecordedAt time.Time
	StartedAt  time.Time
	DeltaPct   float64
}

// Point returns the entry as change detection sees it.
func (e HistoryEntry) Point() SeriesPoint {
	return SeriesPoint{Key: e.Key(), Campaign: e.Campaign, RecordedAt: e.RecordedAt, StartedAt: e.StartedAt, DeltaPct: e.DeltaPct}
}

// SeriesChanges is one series and the change points of its delta.
type SeriesChanges struct {
	Key     SeriesKey     `json:"key"`
	Points  int           `json:"points"`
	Changes []ChangePoint `json:"changes"`
}

// ChangePoint is where a series' delta changed: Campaign is the first
// campaign after the change, Index its position in the series (0 is the
// oldest), BeforePct and AfterPct the mean delta of the stretches either
// side, PValue the permutation test's.
type ChangePoint struct {
	Campaign   string    `json:"campaign"`
	RecordedAt time.Time `json:"recorded_at"`
	Index      int       `json:"index"`
	BeforePct  float64   `json:"before_pct"`
	AfterPct   float64   `json:"after_pct"`
	PValue     float64   `json:"p_value"`
}

// HistoryChanges groups points into series (ordered by key), each in time
// order (recorded, then started, then campaign id), and finds the change
// points of each series' delta.
func HistoryChanges(points []SeriesPoint) []SeriesChanges {
	index := map[SeriesKey]int{}
	var groups [][]SeriesPoint
	for _, p := range points {
		i, ok := index[p.Key]
		if !ok {
			i = len(groups)
			index[p.Key] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	slices.SortFunc(groups, func(a, b []SeriesPoint) int { return compareKeys(a[0].Key, b[0].Key) })
	deltas := make([][]float64, len(groups))
	for i, g := range groups {
		slices.SortStableFunc(g, func(a, b SeriesPoint) int {
			return cmp.Or(a.RecordedAt.Compare(b.RecordedAt), a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Campaign, b.Campaign))
		})
		deltas[i] = make([]float64, len(g))
		for j, p := range g {
			deltas[i][j] = p.DeltaPct
		}
	}
	found := changepoint.DetectAll(deltas, changepoint.Options{})
	out := make([]SeriesChanges, len(groups))
	for i, g := range groups {
		out[i] = SeriesChanges{Key: g[0].Key, Points: len(g), Changes: []ChangePoint{}}
		for _, c := range found[i] {
			p := g[c.Index]
			out[i].Changes = append(out[i].Changes, ChangePoint{Campaign: p.Campaign, RecordedAt: p.RecordedAt,
				Index: c.Index, BeforePct: c.Before, AfterPct: c.After, PValue: c.PValue})
		}
	}
	return out
}

func compareKeys(a, b SeriesKey) int {
	return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Baseline, b.Baseline), cmp.Compare(a.Candidate, b.Candidate),
		cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Scale, b.Scale), cmp.Compare(a.Clients, b.Clients),
		cmp.Compare(a.DurationSeconds, b.DurationSeconds), cmp.Compare(a.Protocol, b.Protocol))
}

// WriteChanges writes the change points of each series as text, one line
// per change, series without a change in one line each.
func WriteChanges(w io.Writer, series []SeriesChanges) error {
	var b strings.Builder
	for _, s := range series {
		k := s.Key
		fmt.Fprintf(&b, "%s vs %s, %s, scale %d, %s, %gs, %s on %s: %d points, ", k.Candidate, k.Baseline, orNA(k.Mode), k.Scale,
			plural(k.Clients, "client"), k.DurationSeconds, orNA(k.Protocol), k.Host, s.Points)
		if len(s.Changes) == 0 {
			b.WriteString("no change\n")
			continue
		}
		fmt.Fprintf(&b, "%s\n", plural(len(s.Changes), "change"))
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "  %s  campaign %s (point %d): %s -> %s (p = %.3g)\n", c.RecordedAt.UTC().Format("2006-01-02 15:04"),
				c.Campaign, c.Index, pct(c.BeforePct), pct(c.AfterPct), c.PValue)
		}
	}
	if b.Len() == 0 {
		b.WriteString("no history entries\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
