package bisect

import (
	"errors"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// invalid is the *campaign.ValidationError at the bisect's field flag:
// one of its settings that cannot run, or refs that give nothing to
// bisect. The runner names the flag, the provider the attribute.
func invalid(flag, title, format string, args ...any) *campaign.ValidationError {
	return campaign.Invalid(campaign.Path{Flag: flag, Index: -1}, title, format, args...)
}

// Variant names of the campaigns a bisect runs.
const (
	variantCommit = "commit"
	variantGood   = "good"
	variantBad    = "bad"
)

// Validate checks everything about the definition that can be checked
// without the host and returns every fault it finds, joined
// *campaign.ValidationError values: the bisect's own, then those of the
// campaign of its steps.
func (c *Config) Validate() error {
	var errs []error
	add := func(flag, title, format string, args ...any) *campaign.ValidationError {
		e := invalid(flag, title, format, args...)
		errs = append(errs, e)
		return e
	}
	if c.GitURL == "" {
		add("git", "Missing Repository", "the git repository to bisect is required: a URL, or a path on the host")
	}
	for _, r := range []struct{ flag, v string }{{"good", c.Good}, {"bad", c.Bad}} {
		switch {
		case r.v == "":
			add(r.flag, "Missing Ref", "the %s commit is required: a branch, tag or commit of the repository", r.flag)
		case strings.HasPrefix(r.v, "-") || strings.ContainsAny(r.v, " \t\n"):
			add(r.flag, "Invalid Ref", "%q is not a git ref: it starts with - or holds white space", r.v)
		}
	}
	if c.Good != "" && c.Good == c.Bad {
		e := add("bad", "Nothing To Bisect", "good and bad are both %q: give bad a later commit than good", c.Bad)
		e.Uses = append(e.Uses, "good")
	}
	switch c.Direction {
	case DirectionRegression, DirectionImprovement:
	default:
		add("direction", "Invalid Direction", "%q, want %s (bad is slower than good) or %s (bad is faster)", c.Direction, DirectionRegression, DirectionImprovement)
	}
	if c.StepRounds < 1 || c.StepRounds > MaxStepRounds {
		add("step-rounds", "Invalid Step Rounds", "%d, want 1 to %d", c.StepRounds, MaxStepRounds)
	}
	// Each step decides from its comparisons' tests: a number of
	// iterations that gives none could never decide anything.
	fewest := report.MinPairs
	if c.Campaign.Order == campaign.OrderRandomized {
		fewest = report.MinPerSide
	}
	if !c.Campaign.IterationsAuto && c.Campaign.Iterations >= 1 && c.Campaign.Iterations < fewest {
		add("iterations", "Too Few Iterations For A Bisect", "%d iterations per variant give no test (this order needs at least %d), so no commit could be told good or bad", c.Campaign.Iterations, fewest)
	}
	probe := c.StepCampaign()
	if err := probe.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// StepCampaign is the campaign of a step as the definition gives it, with
// placeholders for the bin directories the builds will give: what the
// campaign's own validation checks.
func (c *Config) StepCampaign() *campaign.Config {
	probe := c.Campaign
	probe.Variants = []campaign.Variant{
		{Name: variantCommit, BinDir: "/commit/bin"}, {Name: variantGood, BinDir: "/good/bin"}, {Name: variantBad, BinDir: "/bad/bin"},
	}
	probe.Defaults()
	return &probe
}

// CheckHost checks what Validate cannot: that the bisect's directory is
// given and that the files the campaign names exist on this host.
func (c *Config) CheckHost() error {
	probe := c.Campaign
	probe.Variants = nil
	return probe.CheckHost()
}
