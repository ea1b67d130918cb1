// Package bisect finds the commit that changed PostgreSQL's performance:
// between a good and a bad commit of a git repository it builds commits
// (internal/pgbuild, cached by build key, through ccache), measures each
// against both ends with the A/B engine (internal/campaign) and decides
// with its statistics (internal/report), until one commit is left or the
// range can shrink no further. A journal lets a killed bisect resume at its
// step with its finished builds and runs.
package bisect

import (
	"fmt"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// Directions of a bisect: what bad is, compared with good.
const (
	// DirectionRegression: bad is slower than good.
	DirectionRegression = "regression"
	// DirectionImprovement: bad is faster than good.
	DirectionImprovement = "improvement"
)

// DefaultGitCache holds the mirrors of the repositories bisected.
const DefaultGitCache = "/var/cache/pgbench/git"

// MaxStepRounds bounds --step-rounds: each round is a whole campaign.
const MaxStepRounds = 10

// Fields are the settings of a bisect besides the campaign's (workload,
// settings, pinning, order, alpha: campaign.Fields, but for the variants,
// which the bisect makes) and the build flags (pgbuild.BindFlags): how the
// runner spells them, where pgbench_perf_bisect puts them, their defaults
// and what they mean.
var Fields = []campaign.Field{
	{Flag: "git", Attribute: "git_url", Usage: "git repository of PostgreSQL: a URL, or a path on the host (required)"},
	{Flag: "good", Attribute: "good", Usage: "the commit with the old performance: a branch, tag or commit of the repository (required)"},
	{Flag: "bad", Attribute: "bad", Usage: "the commit with the new performance; good must be one of its ancestors (required)"},
	{Flag: "direction", Attribute: "direction", Default: DirectionRegression,
		Usage: "what changed between good and bad: regression (bad is slower) or improvement (bad is faster)"},
	{Flag: "step-rounds", Attribute: "step_rounds", Default: "3",
		Usage: fmt.Sprintf("rounds of the campaign's iterations that the endpoints, and each commit, get at most: a commit still unclear after the last is skipped, as git bisect skip does; every look decides at alpha divided by this, so that looking again does not inflate the error rate (1 to %d)", MaxStepRounds)},
	{Flag: "build-root", Attribute: "build_root", Default: pgbuild.DefaultRoot,
		Usage: "directory of the builds, one prefix per build key, shared with pgbench-runner build"},
	{Flag: "git-cache", Default: DefaultGitCache, Usage: "directory of the mirrors of the repositories bisected, one per URL"},
}

// FieldByFlag is the field the runner spells --flag, looked up in Fields
// and then in campaign.Fields; the zero Field when there is none.
func FieldByFlag(flag string) campaign.Field {
	for _, f := range Fields {
		if f.Flag == flag {
			return f
		}
	}
	return campaign.FieldByFlag(flag)
}

// Config is a whole bisect definition. BindFlags and Decode read it from
// the runner's arguments, Args writes them, Validate checks it.
type Config struct {
	// Campaign is the measurement of every step: workload, settings,
	// pinning, order, iterations, alpha. Its Variants stay empty (the
	// bisect makes them) and its OutDir is the bisect's directory.
	Campaign campaign.Config

	GitURL    string
	Good      string
	Bad       string
	Direction string
	// StepRounds is how many rounds of the campaign's iterations the
	// endpoints, and each commit, get at most.
	StepRounds int
	// Build is how every commit is built: patches, configure flags,
	// CFLAGS, ccache, the root of the prefixes. Its source is the commit.
	Build pgbuild.Options
	// GitCache holds the repository mirrors.
	GitCache string

	// Fresh ignores (and moves aside) an existing journal.
	Fresh bool
	// Command is the command line that reproduces the bisect.
	Command []string
}

// DefaultConfig is a definition with every field at its default: what
// the runner's flags hold before any is given, and where the provider
// starts before it applies a configuration.
func DefaultConfig() *Config {
	c, err := Decode(nil)
	if err != nil {
		panic("bisect: the defaults in Fields do not decode: " + err.Error())
	}
	return c
}

// Defaults fills the zero strings that have a default: the campaign's, and
// the bisect's own from Fields. Numbers keep a zero, which Validate
// refuses, as the campaign's do.
func (c *Config) Defaults() {
	c.Campaign.Defaults()
	for _, f := range []struct {
		p    *string
		flag string
	}{{&c.Direction, "direction"}, {&c.Build.Root, "build-root"}, {&c.GitCache, "git-cache"}} {
		if *f.p == "" {
			*f.p = FieldByFlag(f.flag).Default
		}
	}
}
