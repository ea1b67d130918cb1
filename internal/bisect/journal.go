package bisect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
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

type journal struct {
	f         *os.File
	startedAt time.Time
	builds    map[string]Build
	endpoints *Endpoints
	steps     []Step
}

// openJournal opens (or starts) the journal in dir for h. A journal of
// another bisect, or of the same one whose refs now name other commits, is
// refused unless fresh, which moves it aside.
func openJournal(dir string, h journalHeader, fresh bool) (*journal, error) {
	path := filepath.Join(dir, JournalFile)
	j := &journal{builds: map[string]Build{}}
	b, err := atomicfile.ReadJSONLines(path, fresh, h.StartedAt)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		old, err := j.replay(b, path)
		if err != nil {
			return nil, err
		}
		if err := sameBisect(*old, h, path); err != nil {
			return nil, err
		}
		j.startedAt = old.StartedAt
	}
	if j.f, err = atomicfile.OpenJSONLines(path, len(b)); err != nil {
		return nil, err
	}
	if len(b) == 0 {
		j.startedAt = h.StartedAt
		if err := j.append(journalLine{Header: &h}); err != nil {
			j.f.Close()
			return nil, err
		}
	}
	return j, nil
}

// replay reads the lines of a journal into j and returns its header.
func (j *journal) replay(b []byte, path string) (*journalHeader, error) {
	var h *journalHeader
	err := atomicfile.EachJSONLine(b, path, func(l journalLine) {
		switch {
		case l.Header != nil:
			h = l.Header
		case l.Build != nil:
			j.builds[l.Build.Commit] = l.Build.Build
		case l.Endpoints != nil:
			j.endpoints = l.Endpoints
		case l.Step != nil:
			j.steps = append(j.steps, *l.Step)
		}
	})
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("journal %s has no header line", path)
	}
	return h, nil
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

func (j *journal) append(l journalLine) error { return atomicfile.AppendJSONLine(j.f, l) }

func (j *journal) close() error { return j.f.Close() }

// ReadBuilds returns the builds recorded in the journal of the bisect in
// dir, by commit; none when there is no journal.
func ReadBuilds(dir string) (map[string]Build, error) {
	path := filepath.Join(dir, JournalFile)
	b, err := atomicfile.ReadJSONLines(path, false, time.Time{})
	if err != nil {
		return nil, err
	}
	j := &journal{builds: map[string]Build{}}
	if len(b) > 0 {
		if _, err := j.replay(b, path); err != nil {
			return nil, err
		}
	}
	return j.builds, nil
}
