package bisect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// A bisect crosses from the provider to the runner as `pgbench-runner
// bisect` arguments: its own flags (Fields), the build flags of
// pgbuild.BindFlags and the campaign flags of campaign.BindFlags, less the
// variants. Args encodes a Config; BindFlags and Decode read the same
// Config back.

// Flags decodes the flags of a flag set into a Config.
type Flags struct {
	fs       *pflag.FlagSet
	c        *Config
	campaign *campaign.Flags
	build    *pgbuild.Flags
}

// BindFlags declares the bisect's flags into fs, bound to c: its own, the
// build's and the campaign's, with their defaults and usage. Parse fs, then
// call Decode.
func BindFlags(fs *pflag.FlagSet, c *Config) *Flags {
	f := &Flags{fs: fs, c: c}
	u := func(flag string) string { return FieldByFlag(flag).Usage }
	fs.StringVar(&c.GitURL, "git", "", u("git"))
	fs.StringVar(&c.Good, "good", "", u("good"))
	fs.StringVar(&c.Bad, "bad", "", u("bad"))
	fs.StringVar(&c.Direction, "direction", "", u("direction"))
	fs.IntVar(&c.StepRounds, "step-rounds", 0, u("step-rounds"))
	f.build = pgbuild.BindFlags(fs, &c.Build, true)
	fs.StringVar(&c.Build.Root, "build-root", "", u("build-root"))
	fs.StringVar(&c.GitCache, "git-cache", "", u("git-cache"))
	f.campaign = campaign.BindFlags(fs, &c.Campaign)
	for _, fd := range Fields {
		if fd.Default == "" {
			continue
		}
		fl := fs.Lookup(fd.Flag)
		if err := fl.Value.Set(fd.Default); err != nil {
			panic(fmt.Sprintf("bisect: default %q of --%s: %v", fd.Default, fd.Flag, err))
		}
		fl.DefValue = fd.Default
	}
	// The bisect makes the variants: the commit under test, good and bad.
	for _, name := range []string{"variant", "variant-set"} {
		fs.Lookup(name).Hidden = true
	}
	fs.Lookup("out").Usage = "bisect directory: its journal, the campaigns of the endpoints and of every step, bisect.json and summary.md (required)"
	return f
}

// Decode completes the Config from the parsed flags and fills what is left
// with the defaults. Malformed values are errors, joined; Validate checks
// the rest.
func (f *Flags) Decode() error {
	var errs []error
	if err := f.campaign.Decode(); err != nil {
		errs = append(errs, err)
	}
	for _, name := range []string{"variant", "variant-set"} {
		if f.fs.Changed(name) {
			errs = append(errs, invalid(name, "Variants Of A Bisect",
				"a bisect makes its own variants (the commit under test, good and bad): give --git, --good and --bad instead"))
		}
	}
	f.build.Finish()
	f.c.Defaults()
	return errors.Join(errs...)
}

// Decode is the Config that `pgbench-runner bisect` args define, bisect,
// build and campaign flags only.
func Decode(args []string) (*Config, error) {
	var c Config
	fs := pflag.NewFlagSet("bisect", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := BindFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("decode bisect arguments: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("decode bisect arguments: unexpected argument %q", fs.Arg(0))
	}
	return &c, f.Decode()
}

// Args encodes the Config as `pgbench-runner bisect` arguments, each as one
// --flag=value: the bisect's own flags, the build flags, then the
// campaign's (see campaign.Config.Args). Call Defaults first for a
// definition that leaves fields zero.
func (c *Config) Args() []string {
	a := c.definitionArgs()
	a = append(a, "--build-root="+c.Build.Root, "--git-cache="+c.GitCache)
	for _, arg := range c.Build.FlagArgs() {
		if !definesBuild(arg) {
			a = append(a, arg)
		}
	}
	return append(a, c.Campaign.Args()...)
}

// definitionArgs are the bisect's own arguments that make it what it is:
// the range, the direction, the rounds and what is built (patches,
// configure flags, CFLAGS). Where things are kept and how fast they are
// built (jobs, ccache) are left out.
func (c *Config) definitionArgs() []string {
	a := []string{"--git=" + c.GitURL, "--good=" + c.Good, "--bad=" + c.Bad, "--direction=" + c.Direction,
		"--step-rounds=" + strconv.Itoa(c.StepRounds)}
	for _, arg := range c.Build.FlagArgs() {
		if definesBuild(arg) {
			a = append(a, arg)
		}
	}
	return a
}

// definesBuild says a build flag changes what is built, not how.
func definesBuild(arg string) bool {
	for _, flag := range []string{"patch", "configure-flag", "cflags"} {
		if strings.HasPrefix(arg, "--"+flag+"=") {
			return true
		}
	}
	return false
}

// Key names a bisect by its definition: the campaign's key (what each step
// measures), alpha (which, unlike in a campaign, decides where the bisect
// goes) and the bisect's own definition. Equal definitions have equal keys,
// so a retried apply finds the journal to resume.
func (c *Config) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "bisect/v1\x00%s\x00%s\x00", c.Campaign.Key(), strconv.FormatFloat(c.Campaign.Alpha, 'g', -1, 64))
	for _, a := range c.definitionArgs() {
		fmt.Fprintf(h, "%d:%s", len(a), a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
