package bisect

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/journal"
)

// The journal (bisect.jsonl) holds a header naming the bisect and its
// resolved range, then one line per finished build, the endpoints' outcome
// and one line per decided step, each synced before the bisect goes on. A
// resumed bisect replays it: finished builds and decisions are taken as
// they are, and the campaign of the step in flight resumes from its own
// journal.

type journalHeader struct {
	// Key is Config.Key; Definition the arguments it hashes, kept to say
	// what differs.
	Key        string    `json:"key"`
	Definition []string  `json:"definition"`
	Good       string    `json:"good"`
	Bad        string    `json:"bad"`
	StartedAt  time.Time `json:"started_at"`
}

type buildRecord struct {
	Commit string `json:"commit"`
	Build  Build  `json:"build"`
}

type journalLine struct {
	Header    *journalHeader `json:"header,omitempty"`
	Build     *buildRecord   `json:"build,omitempty"`
	Endpoints *Endpoints     `json:"endpoints,omitempty"`
	Step      *Step          `json:"step,omitempty"`
}

// journalFormat is how the journal's lines hold its header.
var journalFormat = journal.Format[journalHeader, journalLine]{
	Header: func(l journalLine) *journalHeader { return l.Header },
	Line:   func(h *journalHeader) journalLine { return journalLine{Header: h} },
}

// journalState is an open journal and what it holds: the finished builds
// by commit, the endpoints' outcome and the decided steps.
type journalState struct {
	file      *journal.File[journalHeader, journalLine]
	startedAt time.Time
	builds    map[string]Build
	endpoints *Endpoints
	steps     []Step
}

func newJournalState() *journalState { return &journalState{builds: map[string]Build{}} }

// openJournal opens (or starts) the journal in dir for h. A journal of
// another bisect, or of the same one whose refs now name other commits, is
// refused unless fresh, which moves it aside.
func openJournal(dir string, h journalHeader, fresh bool) (*journalState, error) {
	path := filepath.Join(dir, JournalFile)
	j := newJournalState()
	check := func(old journalHeader) error { return sameBisect(old, h, path) }
	f, err := journal.Open(path, journalFormat, h, fresh, h.StartedAt, check, j.replay)
	if err != nil {
		return nil, err
	}
	j.file, j.startedAt = f, f.Header.StartedAt
	return j, nil
}

// replay takes a line of an existing journal: a build, the endpoints or a
// step.
func (j *journalState) replay(l journalLine) {
	switch {
	case l.Build != nil:
		j.builds[l.Build.Commit] = l.Build.Build
	case l.Endpoints != nil:
		j.endpoints = l.Endpoints
	case l.Step != nil:
		j.steps = append(j.steps, *l.Step)
	}
}

// sameBisect refuses to resume the journal of old as the bisect cur.
func sameBisect(old, cur journalHeader, path string) error {
	if old.Key != cur.Key {
		what := "its definition differs"
		for i := range max(len(old.Definition), len(cur.Definition)) {
			a, b := at(old.Definition, i), at(cur.Definition, i)
			if a != b {
				what = fmt.Sprintf("the journal has %q where this bisect has %q", a, b)
				break
			}
		}
		if slices.Equal(old.Definition, cur.Definition) {
			what = "the campaign of each step differs (workload, settings, iterations, order)"
		}
		return invalid("out", "Bisect Directory In Use", "%s holds the journal of another bisect (%s); use another --out, or --fresh to start over", path, what)
	}
	if old.Good != cur.Good || old.Bad != cur.Bad {
		return invalid("out", "Refs Moved", "%s holds this bisect for good %s and bad %s, but the refs now name %s and %s; use --fresh to bisect the new range",
			path, old.Good, old.Bad, cur.Good, cur.Bad)
	}
	return nil
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func (j *journalState) append(l journalLine) error { return j.file.Append(l) }

func (j *journalState) close() error { return j.file.Close() }

// ReadBuilds returns the builds recorded in the journal of the bisect in
// dir, by commit; none when there is no journal.
func ReadBuilds(dir string) (map[string]Build, error) {
	j := newJournalState()
	if _, _, err := journal.Read(filepath.Join(dir, JournalFile), journalFormat, j.replay); err != nil {
		return nil, err
	}
	return j.builds, nil
}
