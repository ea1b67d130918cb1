package bisect

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// SchemaVersion is the version of the bisect.json layout. The provider
// refuses documents with a version it does not know.
const SchemaVersion = 1

// Files in a bisect's directory.
const (
	// JournalFile records the bisect's builds and decisions.
	JournalFile = "bisect.jsonl"
	// ResultsFile is the finished bisect's Result.
	ResultsFile = "bisect.json"
	// SummaryFile is the Result as Markdown.
	SummaryFile = "summary.md"
)

// Outcomes of a bisect.
const (
	// OutcomeFirstBad: one commit is the first bad one.
	OutcomeFirstBad = "first-bad-commit"
	// OutcomeRange: skipped commits left a range of suspects.
	OutcomeRange = "range"
	// OutcomeNothing: the endpoints do not differ in the direction asked.
	OutcomeNothing = "nothing-to-bisect"
)

// Result is bisect.json: the contract between the runner and the provider.
type Result struct {
	SchemaVersion int `json:"schema_version"`
	// Outcome is OutcomeFirstBad, OutcomeRange or OutcomeNothing; Answer
	// says it in a sentence, with the numbers that decided it.
	Outcome string `json:"outcome"`
	Answer  string `json:"answer"`
	// FirstBad is the first bad commit; nil unless the outcome is
	// OutcomeFirstBad.
	FirstBad *Commit `json:"first_bad_commit"`
	// Range holds the suspects of OutcomeRange, oldest first: the skipped
	// commits after the last good one, and the first bad one.
	Range []RangeCommit `json:"range,omitempty"`

	GitURL    string `json:"git_url"`
	Direction string `json:"direction"`
	Good      Commit `json:"good"`
	Bad       Commit `json:"bad"`
	// Commits is the number of commits after good on bad's first-parent
	// line, bad included.
	Commits   int       `json:"commits"`
	Endpoints Endpoints `json:"endpoints"`
	Steps     []Step    `json:"steps"`

	// Workload is what every run executed (from the endpoints' campaign).
	Workload report.Workload `json:"workload"`
	Build    BuildSettings   `json:"build"`
	// Alpha is the error rate of a decision; every look is at
	// Alpha/StepRounds, with Holm's correction across its comparisons.
	Alpha      float64 `json:"alpha"`
	StepRounds int     `json:"step_rounds"`
	Method     string  `json:"method"`

	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// WallSeconds is from the start of the bisect (its journal) to its
	// end, interruptions included; BuildSeconds and MeasureSeconds add up
	// the builds and the campaigns.
	WallSeconds    float64 `json:"wall_seconds"`
	BuildSeconds   float64 `json:"build_seconds"`
	MeasureSeconds float64 `json:"measure_seconds"`
	// Command is the runner command line that reproduces the bisect.
	Command  []string `json:"command"`
	Dir      string   `json:"dir"`
	Warnings []string `json:"warnings,omitempty"`
}

// RangeCommit is a suspect of OutcomeRange: Status is bad for the first
// bad commit, the class that skipped it for the others.
type RangeCommit struct {
	Commit
	Status string `json:"status"`
}

// BuildSettings is how every commit was built.
type BuildSettings struct {
	ConfigureFlags []string `json:"configure_flags"`
	CFlags         string   `json:"cflags,omitempty"`
	Patches        []string `json:"patches"`
	CCache         bool     `json:"ccache"`
	Root           string   `json:"root"`
	// Incremental says the commits were built one after another in one
	// source tree, configured with --enable-depend (which the build keys
	// cover), each rebuilding what changed since the last.
	Incremental bool `json:"incremental"`
}

// Endpoints is the check that good and bad differ in the direction asked.
type Endpoints struct {
	// Outcome is EndpointsConfirmed, EndpointsOpposite or
	// EndpointsNoDifference.
	Outcome string         `json:"outcome"`
	Cells   []EndpointCell `json:"cells"`
	Rounds  int            `json:"rounds"`
	Good    Build          `json:"good_build"`
	Bad     Build          `json:"bad_build"`
	// MeasureSeconds is the campaigns' wall time; Dir their directory,
	// relative to the bisect's.
	MeasureSeconds float64 `json:"measure_seconds"`
	Dir            string  `json:"dir"`
	// Workload is what every run executed, as the campaign reported it.
	Workload report.Workload `json:"workload"`
}

// Build is one commit's build.
type Build struct {
	BuildKey string  `json:"build_key,omitempty"`
	BinDir   string  `json:"bin_dir,omitempty"`
	Seconds  float64 `json:"seconds"`
	// Cached says an earlier build with the same key was used.
	Cached bool `json:"cached"`
	// CCache says it compiled through ccache.
	CCache bool `json:"ccache"`
	// Incremental says make rebuilt only what changed since the source
	// tree's last build (Tree); Seconds is then that build's time, to
	// compare with a build from the start (the first build's).
	Incremental bool `json:"incremental"`
	// Tree is the source tree it was built in.
	Tree string `json:"tree,omitempty"`
	// Error says why the commit did not build; LogPath has the details.
	Error   string `json:"error,omitempty"`
	LogPath string `json:"log_path,omitempty"`
}

// Step is one commit tested.
type Step struct {
	// N counts the steps from 1; Position is the commit's place in the
	// range (good is 0, bad is Result.Commits).
	N        int    `json:"n"`
	Position int    `json:"position"`
	Commit   Commit `json:"commit"`
	// Class is ClassGood, ClassBad, ClassSkipped or ClassBuildFailed.
	Class string     `json:"class"`
	Cells []StepCell `json:"cells"`
	// Rounds is the number of rounds measured (0 for a commit that did
	// not build).
	Rounds         int     `json:"rounds"`
	Build          Build   `json:"build"`
	MeasureSeconds float64 `json:"measure_seconds"`
	Dir            string  `json:"dir,omitempty"`
	// Note says why a commit was skipped.
	Note string `json:"note,omitempty"`
}

// DecodeResult parses a bisect.json document and refuses a schema version
// it does not know; name says where it came from, for errors.
func DecodeResult(b []byte, name string) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", name, err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s has schema version %d, this version reads %d", name, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}
