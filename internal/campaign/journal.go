package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// JournalFile is the name of the journal inside the campaign directory.
const JournalFile = "journal.jsonl"

// Definition is what makes two campaigns the same campaign: the journal's
// header holds it, and a resume with a different one is refused. It leaves
// out what does not change the measurement (alpha, output paths).
type Definition struct {
	Variants         []DefinitionVariant `json:"variants"`
	Settings         map[string]string   `json:"settings"`
	Mode             string              `json:"mode"`
	Script           string              `json:"script,omitempty"`
	Scale            int                 `json:"scale"`
	Warehouses       int                 `json:"warehouses,omitempty"`
	Clients          []int               `json:"clients"`
	Threads          string              `json:"threads"`
	DurationSeconds  float64             `json:"duration_seconds"`
	Iterations       int                 `json:"iterations"`
	IterationsAuto   bool                `json:"iterations_auto,omitempty"`
	TargetCIPct      float64             `json:"target_ci_pct,omitempty"`
	MinIterations    int                 `json:"min_iterations,omitempty"`
	MaxIterations    int                 `json:"max_iterations,omitempty"`
	Protocol         string              `json:"protocol"`
	WarmupSeconds    float64             `json:"warmup_seconds"`
	CheckpointBefore bool                `json:"checkpoint_before"`
	Restart          string              `json:"restart"`
	Order            string              `json:"order"`
	Seed             int64               `json:"seed"`
	ServerNUMA       string              `json:"server_numa"`
	ClientNUMA       string              `json:"client_numa"`
	SamplingRate     string              `json:"sampling_rate"`
	// Profile changes the plan (one-per-cell adds runs) and what the
	// statistics use (every-run), so a journal holds one mode.
	Profile string `json:"profile,omitempty"`
}

// metric is the definition's figure of merit: NOPM for TPC-C, else TPS.
func (d Definition) metric() string {
	if d.Mode == ModeTPCC {
		return report.MetricNOPM
	}
	return report.MetricTPS
}

// DefinitionVariant is a variant as the journal records it.
type DefinitionVariant struct {
	Name      string            `json:"name"`
	BinDir    string            `json:"bin_dir"`
	Settings  map[string]string `json:"settings"`
	HugePages string            `json:"huge_pages"`
}

func (c *Config) definition() Definition {
	d := Definition{
		Settings: c.Settings, Mode: c.Mode, Script: c.Script, Scale: c.Scale, Warehouses: c.Warehouses, Clients: c.Clients,
		Threads: c.Threads, DurationSeconds: c.Duration.Seconds(), Iterations: c.Iterations,
		Protocol: c.Protocol, WarmupSeconds: c.Warmup.Seconds(), CheckpointBefore: c.CheckpointBefore,
		Restart: c.Restart, Order: c.Order, ServerNUMA: c.ServerNUMA, ClientNUMA: c.ClientNUMA,
		SamplingRate: c.SamplingRate, Profile: c.profileMode(),
	}
	if c.Order == OrderRandomized {
		d.Seed = c.Seed
	}
	if c.IterationsAuto {
		d.IterationsAuto, d.TargetCIPct, d.MinIterations, d.MaxIterations = true, c.TargetCIPct, c.MinIterations, c.MaxIterations
	}
	if d.Settings == nil {
		d.Settings = map[string]string{}
	}
	for _, v := range c.Variants {
		s := v.Settings
		if s == nil {
			s = map[string]string{}
		}
		d.Variants = append(d.Variants, DefinitionVariant{Name: v.Name, BinDir: v.BinDir, Settings: s, HugePages: v.HugePages})
	}
	return d
}

// journalLine is one line of the journal: the header first, then one run
// per finished pgbench execution.
type journalLine struct {
	Header *journalHeader `json:"header,omitempty"`
	Run    *report.Run    `json:"run,omitempty"`
	// HugePages records what a variant's server really used, so a resumed
	// campaign that starts no server still reports it.
	HugePages *observedHugePages `json:"huge_pages,omitempty"`
}

type observedHugePages struct {
	Variant  string `json:"variant"`
	Observed string `json:"observed"`
}

type journalHeader struct {
	Definition Definition `json:"definition"`
	StartedAt  time.Time  `json:"started_at"`
}

// Journal appends finished runs to OUT/journal.jsonl, each synced to disk
// before the next run starts, so a crash loses at most the run in flight.
type Journal struct {
	f         *os.File
	StartedAt time.Time
	Runs      map[int]report.Run
	// HugePages is the last observed huge-page use per variant.
	HugePages map[string]string
}

// openJournal opens (or creates) the journal for def. An existing journal
// for a different definition is refused, naming the first field that
// differs, unless fresh is set, in which case it is moved aside.
func openJournal(dir string, def Definition, fresh bool, now time.Time) (*Journal, error) {
	path := filepath.Join(dir, JournalFile)
	j := &Journal{Runs: map[int]report.Run{}, HugePages: map[string]string{}}
	b, err := atomicfile.ReadJSONLines(path, fresh, now)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		h, runs, hp, err := parseJournal(b, path)
		if err != nil {
			return nil, err
		}
		if field := differingField(h.Definition, def); field != "" {
			return nil, Invalid(at("out"), "Campaign Directory In Use",
				"%s holds the journal of a different campaign (%s); use another %s, or %s to start over", path, field, ref("out"), ref("fresh"))
		}
		j.StartedAt, j.Runs, j.HugePages = h.StartedAt, runs, hp
	}
	if j.f, err = atomicfile.OpenJSONLines(path, len(b)); err != nil {
		return nil, err
	}
	if len(b) == 0 {
		j.StartedAt = now
		if err := j.append(journalLine{Header: &journalHeader{Definition: def, StartedAt: now}}); err != nil {
			j.f.Close()
			return nil, err
		}
	}
	return j, nil
}

// parseJournal reads the lines of a journal: its header, its runs by
// sequence number and the last observed huge-page use per variant. A
// journal without a header is an error.
func parseJournal(b []byte, path string) (*journalHeader, map[int]report.Run, map[string]string, error) {
	var h *journalHeader
	runs := map[int]report.Run{}
	hp := map[string]string{}
	err := atomicfile.EachJSONLine(b, path, func(l journalLine) {
		switch {
		case l.Header != nil:
			h = l.Header
		case l.Run != nil:
			runs[l.Run.Seq] = *l.Run
		case l.HugePages != nil:
			hp[l.HugePages.Variant] = l.HugePages.Observed
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if h == nil {
		return nil, nil, nil, fmt.Errorf("journal %s has no header line", path)
	}
	return h, runs, hp, nil
}

// differingField compares two definitions field by field through their
// JSON, so the message names the field as the journal spells it.
func differingField(old, cur Definition) string {
	var a, b map[string]json.RawMessage
	ja, _ := json.Marshal(old)
	jb, _ := json.Marshal(cur)
	json.Unmarshal(ja, &a)
	json.Unmarshal(jb, &b)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !bytes.Equal(a[k], b[k]) {
			if k == "variants" {
				return "variants differ: " + variantDiff(old.Variants, cur.Variants)
			}
			return fmt.Sprintf("%s differs: journal has %s, now %s", k, a[k], b[k])
		}
	}
	return ""
}

func variantDiff(old, cur []DefinitionVariant) string {
	if len(old) != len(cur) {
		return fmt.Sprintf("journal has %d, now %d", len(old), len(cur))
	}
	for i := range old {
		ja, _ := json.Marshal(old[i])
		jb, _ := json.Marshal(cur[i])
		if !bytes.Equal(ja, jb) {
			return fmt.Sprintf("journal has %s, now %s", ja, jb)
		}
	}
	return "differ"
}

// Append records a finished run durably.
func (j *Journal) Append(r report.Run) error {
	if err := j.append(journalLine{Run: &r}); err != nil {
		return err
	}
	j.Runs[r.Seq] = r
	return nil
}

func (j *Journal) append(l journalLine) error { return atomicfile.AppendJSONLine(j.f, l) }

// RecordHugePages records a variant's observed huge-page use when it changed.
func (j *Journal) RecordHugePages(variant, observed string) error {
	if j.HugePages[variant] == observed {
		return nil
	}
	if err := j.append(journalLine{HugePages: &observedHugePages{Variant: variant, Observed: observed}}); err != nil {
		return err
	}
	j.HugePages[variant] = observed
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }

// readSeed returns the seed recorded in an existing journal, if any, so a
// randomized campaign resumed without --seed keeps its order.
func readSeed(dir string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, JournalFile))
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	var l journalLine
	if json.Unmarshal(line, &l) != nil || l.Header == nil || l.Header.Definition.Order != OrderRandomized {
		return 0, false
	}
	return l.Header.Definition.Seed, true
}
