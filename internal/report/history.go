package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// HistoryVersion is the version of a history line's layout. ReadHistory
// refuses lines of a newer version; fields may be added without a bump.
const HistoryVersion = 1

// HistoryFile is the name of the history kept beside the collected campaign
// directories (pgbench-results/history.jsonl).
const HistoryFile = "history.jsonl"

// HistoryEntry is one line of the history: one comparison of one cell of a
// finished campaign, with what is needed to compare it with other campaigns
// (the host, the workload, each side's build) and nothing that is only in
// the campaign's own report (the runs).
type HistoryEntry struct {
	HistoryVersion int `json:"history_version"`
	// RecordedAt is when the entry was appended; StartedAt and FinishedAt
	// are the campaign's.
	RecordedAt time.Time `json:"recorded_at"`
	// Campaign is the campaign's id (the pgbench_ab_benchmark resource id).
	Campaign   string          `json:"campaign"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	Host       HistoryHost     `json:"host"`
	Workload   HistoryWorkload `json:"workload"`
	Baseline   HistoryVariant  `json:"baseline"`
	Candidate  HistoryVariant  `json:"candidate"`
	// Method, N and the fields after it are the comparison's (Comparison):
	// N is the runs per side the method used (pairs, when paired), DeltaPct
	// the change of the candidate relative to the baseline in percent,
	// CILowPct and CIHighPct its interval at CILevel (null with too few
	// runs), PAdjusted the p-value after the campaign's correction (Holm),
	// which decides Verdict at Alpha.
	Method    string   `json:"method"`
	N         int      `json:"n"`
	DeltaPct  float64  `json:"delta_pct"`
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	CILevel   float64  `json:"ci_level"`
	PValue    float64  `json:"p_value"`
	PAdjusted float64  `json:"p_adjusted"`
	Alpha     float64  `json:"alpha"`
	Verdict   string   `json:"verdict"`
}

// HistoryHost is the part of the host facts (results.json's sysinfo) that
// can explain a difference between campaigns. Facts the document did not
// carry are zero.
type HistoryHost struct {
	// InstanceType is the EC2 instance type, when the facts name it.
	InstanceType     string `json:"instance_type,omitempty"`
	CPUModel         string `json:"cpu_model"`
	CPUs             int    `json:"cpus"`
	Cores            int    `json:"cores"`
	Sockets          int    `json:"sockets"`
	NUMANodes        int    `json:"numa_nodes"`
	MemoryTotalBytes int64  `json:"memory_total_bytes"`
	Kernel           string `json:"kernel"`
	OS               string `json:"os"`
	// THP is the transparent huge page mode, NUMABalancing and Governor the
	// kernel knobs as sysinfo reports them ("unsupported" where missing).
	THP           string `json:"thp"`
	NUMABalancing string `json:"numa_balancing"`
	Governor      string `json:"governor"`
	// HugePages are the host's huge-page pools when the campaign finished.
	HugePages []HistoryHugePages `json:"hugepages"`
}

// HistoryHugePages is one huge-page pool: its page size and page count.
type HistoryHugePages struct {
	SizeBytes int64 `json:"size_bytes"`
	Total     int64 `json:"total"`
}

// HistoryWorkload is what each run of the cell executed.
type HistoryWorkload struct {
	Mode            string  `json:"mode"`
	Scale           int     `json:"scale"`
	DurationSeconds float64 `json:"duration_seconds"`
	Clients         int     `json:"clients"`
	Protocol        string  `json:"protocol"`
}

// HistoryVariant is one side of a comparison: its build identity and its
// median TPS in the cell.
type HistoryVariant struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	BinDir  string `json:"bin_dir"`
	// BuildKey is set when BinDir is a pgbench_postgres_build prefix.
	BuildKey string `json:"build_key,omitempty"`
	// HugePages is what the running server really used: on, off or unknown.
	HugePages string  `json:"huge_pages"`
	MedianTPS float64 `json:"median_tps"`
}

// HistoryEntries returns one entry per comparison per cell of res, in the
// order of the cells, stamped with campaignID and recordedAt.
func HistoryEntries(res *Results, campaignID string, recordedAt time.Time) []HistoryEntry {
	if res == nil {
		return nil
	}
	host := historyHost(res.Sysinfo)
	variants := map[string]Variant{}
	for _, v := range res.Variants {
		variants[v.Name] = v
	}
	side := func(cell Cell, name string) HistoryVariant {
		v := variants[name]
		return HistoryVariant{Name: name, Version: v.Version, BinDir: v.BinDir, BuildKey: v.BuildKey,
			HugePages: v.HugePagesObserved, MedianTPS: cell.Variants[name].MedianTPS}
	}
	var out []HistoryEntry
	for _, cell := range res.Cells {
		for _, c := range cell.Comparisons {
			out = append(out, HistoryEntry{
				HistoryVersion: HistoryVersion,
				RecordedAt:     recordedAt.UTC(),
				Campaign:       campaignID,
				StartedAt:      res.StartedAt,
				FinishedAt:     res.FinishedAt,
				Host:           host,
				Workload: HistoryWorkload{Mode: res.Workload.Mode, Scale: res.Workload.Scale,
					DurationSeconds: res.Workload.DurationSeconds, Clients: cell.Clients, Protocol: res.Workload.Protocol},
				Baseline:  side(cell, c.Baseline),
				Candidate: side(cell, c.Candidate),
				Method:    c.Method,
				N:         min(c.NBaseline, c.NCandidate),
				DeltaPct:  c.DeltaPct,
				CILowPct:  c.CILowPct,
				CIHighPct: c.CIHighPct,
				CILevel:   c.CILevel,
				PValue:    c.PValue,
				PAdjusted: c.PAdjusted,
				Alpha:     res.Alpha,
				Verdict:   c.Verdict,
			})
		}
	}
	return out
}

// historyHost picks the host facts out of the sysinfo document. Sysinfo is
// whatever the runner wrote (any runner version), so each fact is decoded
// on its own and one of an unexpected type is left out, not an error.
func historyHost(sysinfo any) HistoryHost {
	var h HistoryHost
	raw, err := json.Marshal(sysinfo)
	if err != nil {
		return h
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return h
	}
	get := func(key string, v any) { _ = json.Unmarshal(m[key], v) }
	get("instance_type", &h.InstanceType)
	get("cpu_model", &h.CPUModel)
	get("cpus", &h.CPUs)
	get("cores", &h.Cores)
	get("sockets", &h.Sockets)
	get("memory_total_bytes", &h.MemoryTotalBytes)
	get("kernel", &h.Kernel)
	get("os", &h.OS)
	get("thp", &h.THP)
	get("numa_balancing", &h.NUMABalancing)
	get("governor", &h.Governor)
	var nodes []json.RawMessage
	get("numa_nodes", &nodes)
	h.NUMANodes = len(nodes)
	var pools []json.RawMessage
	get("hugepages", &pools)
	for _, p := range pools {
		var hp HistoryHugePages
		if json.Unmarshal(p, &hp) == nil && hp.SizeBytes > 0 {
			h.HugePages = append(h.HugePages, hp)
		}
	}
	return h
}

// AppendHistory appends entries to the history at path, one JSON line each,
// creating the file and its directory. The lines are written with one
// write under an exclusive flock and synced before it returns, so two
// Terraform resources collecting at once never interleave their lines.
// With no entries it does nothing.
func AppendHistory(path string, entries []HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, e := range entries {
		if e.HistoryVersion == 0 {
			e.HistoryVersion = HistoryVersion
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode history entry of campaign %s: %w", e.Campaign, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create history directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	lock, err := filelock.Wait(f, filelock.Exclusive)
	if err != nil {
		f.Close()
		return fmt.Errorf("lock history: %w", err)
	}
	defer lock.Close()
	// A writer killed in the middle of its line leaves no newline at the
	// end: start on a line of our own so only that line is bad. (Read and
	// write: the last byte is read back.)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("append to history %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync history %s: %w", path, err)
	}
	return lock.Close()
}

// ReadHistory reads a history written by AppendHistory. Blank lines are
// skipped; a line that is not an entry, or is of a newer version, is an
// error naming its line number.
func ReadHistory(r io.Reader) ([]HistoryEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []HistoryEntry
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e HistoryEntry
		dec := json.NewDecoder(bytes.NewReader(text))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("history line %d: %w", line, errors.New("trailing data after the entry"))
		}
		switch {
		case e.HistoryVersion == 0:
			return nil, fmt.Errorf("history line %d: no history_version", line)
		case e.HistoryVersion > HistoryVersion:
			return nil, fmt.Errorf("history line %d: history_version %d is newer than the supported version %d", line, e.HistoryVersion, HistoryVersion)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history line %d: %w", line+1, err)
	}
	return out, nil
}

// HistorySeries is the entries of one comparison over time: the same
// baseline and candidate names, client count and mode, oldest first.
type HistorySeries struct {
	Baseline, Candidate string
	Clients             int
	Mode                string
	Entries             []HistoryEntry
}

// GroupHistory splits entries into series, ordered by baseline, candidate,
// mode and client count; each series is oldest first (by RecordedAt, then
// by the campaign's start).
func GroupHistory(entries []HistoryEntry) []HistorySeries {
	type key struct {
		base, cand, mode string
		clients          int
	}
	index := map[key]int{}
	var out []HistorySeries
	for _, e := range entries {
		k := key{e.Baseline.Name, e.Candidate.Name, e.Workload.Mode, e.Workload.Clients}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, HistorySeries{Baseline: k.base, Candidate: k.cand, Clients: k.clients, Mode: k.mode})
		}
		out[i].Entries = append(out[i].Entries, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Baseline != b.Baseline {
			return a.Baseline < b.Baseline
		}
		if a.Candidate != b.Candidate {
			return a.Candidate < b.Candidate
		}
		if a.Mode != b.Mode {
			return a.Mode < b.Mode
		}
		return a.Clients < b.Clients
	})
	for _, s := range out {
		sort.SliceStable(s.Entries, func(i, j int) bool {
			a, b := s.Entries[i], s.Entries[j]
			if !a.RecordedAt.Equal(b.RecordedAt) {
				return a.RecordedAt.Before(b.RecordedAt)
			}
			return a.StartedAt.Before(b.StartedAt)
		})
	}
	return out
}

// WriteHistory writes one Markdown table per series of entries (see
// GroupHistory), so a trend across campaigns reads top to bottom.
func WriteHistory(w io.Writer, entries []HistoryEntry) error {
	var b strings.Builder
	for i, s := range GroupHistory(entries) {
		if i > 0 {
			b.WriteString("\n")
		}
		mode := s.Mode
		if mode == "" {
			mode = "n/a"
		}
		fmt.Fprintf(&b, "## %s vs %s, %s, %s\n\n", mdText(s.Candidate), mdText(s.Baseline), mdText(mode), plural(s.Clients, "client"))
		b.WriteString("| when | campaign | host | clients | baseline → candidate | delta (CI) | verdict |\n")
		b.WriteString("|:--|:--|:--|--:|:--|--:|:--|\n")
		for _, e := range s.Entries {
			ci := ""
			if e.CILowPct != nil && e.CIHighPct != nil {
				ci = fmt.Sprintf(" (%s .. %s)", pct(*e.CILowPct), pct(*e.CIHighPct))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s → %s | %s%s | %s |\n",
				e.RecordedAt.UTC().Format("2006-01-02 15:04"), mdCell(orNA(e.Campaign)), mdCell(e.Host.Short()), e.Workload.Clients,
				mdCell(e.Baseline.label()), mdCell(e.Candidate.label()), pct(e.DeltaPct), ci, e.Verdict)
		}
	}
	if b.Len() == 0 {
		b.WriteString("no history entries\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// label is the variant's name with its PostgreSQL version and, for a
// pgbench_postgres_build build, the start of its build key.
func (v HistoryVariant) label() string {
	s := v.Name
	var extra []string
	if m := pgVersionRE.FindStringSubmatch(v.Version); m != nil {
		extra = append(extra, m[1])
	} else if v.Version != "" {
		extra = append(extra, v.Version)
	}
	if len(v.BuildKey) >= 8 {
		extra = append(extra, "build "+v.BuildKey[:8])
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

var pgVersionRE = regexp.MustCompile(`\(PostgreSQL\) (\S+)`)

// cpuNoise is the marketing text of a CPU model name that says nothing
// about which CPU it is.
var cpuNoise = strings.NewReplacer("(R)", "", "(TM)", "", "(tm)", "", " CPU", "", " Processor", "")

// Short names the host in a few words: the instance type when known, else
// the CPU model, with its cores and NUMA nodes.
func (h HistoryHost) Short() string {
	name := h.InstanceType
	if name == "" {
		name, _, _ = strings.Cut(cpuNoise.Replace(h.CPUModel), " @ ")
		name = strings.Join(strings.Fields(name), " ")
	}
	var parts []string
	if name != "" {
		parts = append(parts, name)
	}
	if h.Cores > 0 {
		parts = append(parts, plural(h.Cores, "core"))
	}
	if h.NUMANodes > 1 {
		parts = append(parts, fmt.Sprintf("%d NUMA nodes", h.NUMANodes))
	}
	if len(parts) == 0 {
		return "n/a"
	}
	return strings.Join(parts, ", ")
}
