package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/journal"
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
	// Replaced records a pair measured again (see remeasure.go); the runs
	// that replace it follow as ordinary run lines.
	Replaced *report.Replacement `json:"replaced,omitempty"`
}

type observedHugePages struct {
	Variant  string `json:"variant"`
	Observed string `json:"observed"`
}

type journalHeader struct {
	Definition Definition `json:"definition"`
	StartedAt  time.Time  `json:"started_at"`
}

// journalFormat is how the journal's lines hold its header.
var journalFormat = journal.Format[journalHeader, journalLine]{
	Header: func(l journalLine) *journalHeader { return l.Header },
	Line:   func(h *journalHeader) journalLine { return journalLine{Header: h} },
}

// Journal appends finished runs to OUT/journal.jsonl, each synced to disk
// before the next run starts, so a crash loses at most the run in flight.
type Journal struct {
	file      *journal.File[journalHeader, journalLine]
	StartedAt time.Time
	Runs      map[int]report.Run
	// HugePages is the last observed huge-page use per variant.
	HugePages map[string]string
	// Replaced are the pairs measured again, in order.
	Replaced []report.Replacement
}

func newJournal() *Journal {
	return &Journal{Runs: map[int]report.Run{}, HugePages: map[string]string{}}
}

// openJournal opens (or creates) the journal for def. An existing journal
// for a different definition is refused, naming the first field that
// differs, unless fresh is set, in which case it is moved aside.
func openJournal(dir string, def Definition, fresh bool, now time.Time) (*Journal, error) {
	path := filepath.Join(dir, JournalFile)
	j := newJournal()
	check := func(old journalHeader) error {
		if field := differingField(old.Definition, def); field != "" {
			return Invalid(at("out"), "Campaign Directory In Use",
				"%s holds the journal of a different campaign (%s); use another %s, or %s to start over", path, field, ref("out"), ref("fresh"))
		}
		return nil
	}
	f, err := journal.Open(path, journalFormat, journalHeader{Definition: def, StartedAt: now}, fresh, now, check, j.replay)
	if err != nil {
		return nil, err
	}
	j.file, j.StartedAt = f, f.Header.StartedAt
	return j, nil
}

// readJournal reads the journal in dir without opening it for appending:
// its header, and its runs and observed huge pages in a Journal that only
// reads. The header is nil when there is no journal.
func readJournal(dir string) (*journalHeader, *Journal, error) {
	j := newJournal()
	h, ok, err := journal.Read(filepath.Join(dir, JournalFile), journalFormat, j.replay)
	if err != nil || !ok {
		return nil, nil, err
	}
	j.StartedAt = h.StartedAt
	return &h, j, nil
}

// readHeader returns the header of the journal in dir, if it has one.
func readHeader(dir string) (journalHeader, bool) {
	return journal.ReadHeader(filepath.Join(dir, JournalFile), journalFormat)
}

// replay takes a line of an existing journal: a run, by its sequence
// number, or a variant's observed huge-page use.
func (j *Journal) replay(l journalLine) {
	switch {
	case l.Run != nil:
		j.Runs[l.Run.Seq] = *l.Run
	case l.HugePages != nil:
		j.HugePages[l.HugePages.Variant] = l.HugePages.Observed
	case l.Replaced != nil:
		j.Replaced = append(j.Replaced, *l.Replaced)
	}
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

func (j *Journal) append(l journalLine) error { return j.file.Append(l) }

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
func (j *Journal) Close() error { return j.file.Close() }

// readSeed returns the seed recorded in an existing journal, if any, so a
// randomized campaign resumed without --seed keeps its order.
func readSeed(dir string) (int64, bool) {
	h, ok := readHeader(dir)
	if !ok || h.Definition.Order != OrderRandomized {
		return 0, false
	}
	return h.Definition.Seed, true
}
