package campaign

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// Path locates the part of a campaign definition an error is about, so the
// runner can name the flag and the provider the attribute.
type Path struct {
	// Flag is the field, by its runner flag without dashes ("variant",
	// "clients", "set", "mode").
	Flag string
	// Index is the element of a list field (a variant, a client count);
	// -1 for the whole field.
	Index int
	// Part is the part of a variant: "name", "bin_dir", "settings" or
	// "huge_pages"; "" for the whole variant.
	Part string
	// Key is a setting's name, in set or in a variant's settings.
	Key string
}

func at(flag string) Path { return Path{Flag: flag, Index: -1} }

func variantAt(i int, part string) Path { return Path{Flag: "variant", Index: i, Part: part} }

// ref is a reference to another field inside a message: the runner renders
// it as its flag, the provider as its attribute.
type ref string

// ValidationError is a definition that cannot run: a campaign's, or a
// bisect's (internal/bisect makes its own with Invalid, on its own flags).
type ValidationError struct {
	Path Path
	// Title names the fault in a few words, Title Case ("Invalid Client
	// Count"), for a diagnostic's summary.
	Title string
	// Uses are the other fields (by flag) the check read: an error about
	// script may be due to mode. A reader that does not know one of them
	// yet (Terraform at plan time) leaves the error for later.
	Uses   []string
	format string
	args   []any
}

// Invalid is the *ValidationError at p: title for a summary, and a message
// from format and args, which says what is wrong and what to do without
// naming the field at fault (Text puts its name in front).
func Invalid(p Path, title, format string, args ...any) *ValidationError {
	e := &ValidationError{Path: p, Title: title, format: format, args: args}
	for _, a := range args {
		if r, ok := a.(ref); ok && string(r) != p.Flag && !slices.Contains(e.Uses, string(r)) {
			e.Uses = append(e.Uses, string(r))
		}
	}
	return e
}

// Text renders the error with name giving each field's name: the field at
// fault, which leads the message, and the fields it refers to. A field
// without a name (one a reader does not show) leaves the message alone.
func (e *ValidationError) Text(name func(Path) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if r, ok := a.(ref); ok {
			a = name(at(string(r)))
		}
		args[i] = a
	}
	msg := fmt.Sprintf(e.format, args...)
	// A message that opens with its own field needs no prefix.
	if strings.HasPrefix(e.format, "%s") && len(e.args) > 0 && e.args[0] == ref(e.Path.Flag) {
		return msg
	}
	if n := name(e.Path); n != "" {
		return n + ": " + msg
	}
	return msg
}

func (e *ValidationError) Error() string {
	return e.Text(func(p Path) string { return "--" + p.Flag })
}

// IsValidation reports whether err is or holds a *ValidationError.
func IsValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}

// ValidationErrors lists the *ValidationError values err holds, when it is
// one or joins several (as Validate returns them).
func ValidationErrors(err error) []*ValidationError { return ErrorsOf[*ValidationError](err) }

var variantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Validate checks everything about the definition that can be checked
// without the host, and returns every fault it finds: *ValidationError
// values, joined. CheckHost checks the rest on the host.
func (c *Config) Validate() error {
	var f faults
	c.checkVariants(&f)
	c.checkSettings(&f)
	c.checkWorkload(&f)
	c.checkClients(&f)
	c.checkTiming(&f)
	c.checkIterations(&f)
	c.checkOrder(&f)
	c.checkObserve(&f)
	c.checkClient(&f)
	f = append(f, c.checkConnections()...)
	if !(c.Alpha > 0 && c.Alpha <= 0.5) {
		f.add(at("alpha"), "Invalid Alpha", "%v must be more than 0 and at most 0.5", c.Alpha)
	}
	return errors.Join(f...)
}

// faults collects the *ValidationError values of a definition, in the
// order its fields are checked.
type faults []error

func (f *faults) add(p Path, title, format string, args ...any) {
	*f = append(*f, Invalid(p, title, format, args...))
}

// checkVariants checks the variants: two or more, each with its own valid
// name, a bin dir, a huge-pages setting and valid setting names.
func (c *Config) checkVariants(f *faults) {
	switch len(c.Variants) {
	case 0:
		f.add(at("variant"), "No Variants", "no variants: an A/B campaign needs two or more (the first is the baseline)")
	case 1:
		f.add(at("variant"), "Only One Variant", "only one variant (%s): an A/B campaign needs two or more (the first is the baseline)", c.Variants[0].Name)
	}
	firstAt := map[string]int{}
	for i, v := range c.Variants {
		switch {
		case !variantName.MatchString(v.Name):
			f.add(variantAt(i, "name"), "Invalid Variant Name", "variant name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", v.Name)
		case len(v.Name) > MaxVariantName:
			f.add(variantAt(i, "name"), "Invalid Variant Name", "variant name %q is %d characters long; the limit is %d (names become file names and report labels)", v.Name, len(v.Name), MaxVariantName)
		}
		if j, dup := firstAt[v.Name]; dup {
			f.add(variantAt(i, "name"), "Duplicate Variant Name", "variant name %q is used twice (variants %d and %d); give each variant its own name", v.Name, j, i)
		} else {
			firstAt[v.Name] = i
		}
		if v.BinDir == "" {
			f.add(variantAt(i, "bin_dir"), "Missing Bin Dir", "variant %s: no bin dir", v.Name)
		}
		switch v.HugePages {
		case "on", "off", "try":
		default:
			f.add(variantAt(i, "huge_pages"), "Invalid Huge Pages Setting", "variant %s: huge_pages=%q; want on, off or try", v.Name, v.HugePages)
		}
		for _, k := range sortedKeys(v.Settings) {
			p := variantAt(i, "settings")
			p.Key = k
			switch {
			case k == "huge_pages":
				f.add(p, "Huge Pages In Settings", "variant %s: set huge pages with the variant's huge_pages (on, off or try), not in its settings, so the runner can check the server really used them", v.Name)
			case !pgctl.ValidSettingName(k):
				f.add(p, "Invalid Setting Name", "variant %s: setting name %q is not valid", v.Name, k)
			}
		}
	}
}

// checkSettings checks the names of the settings all variants share.
func (c *Config) checkSettings(f *faults) {
	for _, k := range sortedKeys(c.Settings) {
		p := at("set")
		p.Key = k
		switch {
		case k == "huge_pages":
			f.add(p, "Huge Pages In Settings", "huge_pages is per variant: set each variant's huge_pages (on, off or try) instead")
		case !pgctl.ValidSettingName(k):
			f.add(p, "Invalid Setting Name", "setting name %q is not valid", k)
		}
	}
}

// checkWorkload checks what each run executes: the mode, and the fields
// that only some modes read (warehouses, pgbench's options, the script,
// the scale).
func (c *Config) checkWorkload(f *faults) {
	if _, err := pgbench.ParseMode(c.Mode); err != nil && !c.tpcc() {
		f.add(at("mode"), "Unknown Workload Mode", "%v, or %s for TPC-C", err, ModeTPCC)
	}
	switch {
	case c.tpcc() && c.Warehouses < 1:
		f.add(at("warehouses"), "Invalid Warehouses", "%d: %s %s needs a dataset of at least 1 warehouse (about 100 MB each)", c.Warehouses, ref("mode"), ModeTPCC)
	case !c.tpcc() && c.Warehouses != 0:
		f.add(at("warehouses"), "Warehouses Without TPC-C", "only with %s %s; %s is %q", ref("mode"), ModeTPCC, ref("mode"), c.Mode)
	}
	if c.tpcc() {
		// pgbench's own options mean nothing to the TPC-C driver, which
		// runs one connection per client with prepared calls and keeps no
		// per-transaction log.
		for _, o := range []struct {
			flag, value string
		}{{"threads", c.Threads}, {"protocol", c.Protocol}, {"sampling-rate", c.SamplingRate}} {
			if def := FieldByFlag(o.flag).Default; o.value != def {
				f.add(at(o.flag), "Not A TPC-C Setting", "%q: %s applies to pgbench modes only; leave it at %s with %s %s", o.value, ref(o.flag), def, ref("mode"), ModeTPCC)
			}
		}
	}
	switch {
	case c.Mode == string(pgbench.ModeCustom) && c.Script == "":
		f.add(at("script"), "Missing Script", "%s custom needs %s, the path of the pgbench script on the host", ref("mode"), ref("script"))
	case c.Mode != string(pgbench.ModeCustom) && c.Script != "":
		f.add(at("script"), "Script Without Custom Mode", "only with %s custom; %s is %q", ref("mode"), ref("mode"), c.Mode)
	}
	if c.Scale < 1 && !c.tpcc() {
		f.add(at("scale"), "Invalid Scale", "%d must be at least 1", c.Scale)
	}
}

// checkClients checks the client counts: one or more, each positive and
// given once.
func (c *Config) checkClients(f *faults) {
	if len(c.Clients) == 0 {
		f.add(at("clients"), "No Client Counts", "no client counts: give one or more, e.g. 1,16,64")
	}
	seen := map[int]bool{}
	for i, n := range c.Clients {
		p := at("clients")
		p.Index = i
		if n < 1 {
			f.add(p, "Invalid Client Count", "client count %d must be at least 1", n)
		}
		if seen[n] {
			f.add(p, "Duplicate Client Count", "client count %d is given twice", n)
		}
		seen[n] = true
	}
}

// checkTiming checks pgbench's threads and the length of a run and of its
// warm-up.
func (c *Config) checkTiming(f *faults) {
	if c.Threads != "auto" {
		if n, err := strconv.Atoi(c.Threads); err != nil || n < 1 {
			f.add(at("threads"), "Invalid Threads", "%q, want a positive number or auto", c.Threads)
		}
	}
	switch {
	case c.Duration <= 0:
		f.add(at("duration"), "Invalid Duration", "%v must be positive", c.Duration)
	case c.Duration%time.Second != 0:
		f.add(at("duration"), "Invalid Duration", "%v: pgbench runs whole seconds", c.Duration)
	}
	if c.Warmup < 0 || c.Warmup%time.Second != 0 {
		f.add(at("warmup"), "Invalid Duration", "%v: want zero or whole seconds", c.Warmup)
	}
}

// checkIterations checks a fixed number of iterations, or the adaptive
// rule's target and bounds.
func (c *Config) checkIterations(f *faults) {
	switch {
	case !c.IterationsAuto && c.Iterations < 1:
		f.add(at("iterations"), "Invalid Iterations", "%d must be at least 1 (or auto)", c.Iterations)
	case c.IterationsAuto:
		if c.Order != OrderAlternate {
			f.add(at("iterations"), "Adaptive Iterations Need The Alternating Order", "%s auto chooses each client count's length from its first pairs, which only %s %s makes: use %s %s, or a number of iterations", ref("iterations"), ref("order"), OrderAlternate, ref("order"), OrderAlternate)
		}
		if !(c.TargetCIPct > 0 && c.TargetCIPct < 100) {
			f.add(at("target-ci"), "Invalid Target Interval", "%v: want a half-width in percent, more than 0 and less than 100", c.TargetCIPct)
		}
		if c.MinIterations < report.MinPairs {
			f.add(at("min-iterations"), "Invalid Iterations", "%d: the first stage needs at least %d pairs to estimate the spread", c.MinIterations, report.MinPairs)
		}
		if c.MaxIterations < c.MinIterations {
			f.add(at("max-iterations"), "Invalid Iterations", "%d is less than %s %d", c.MaxIterations, ref("min-iterations"), c.MinIterations)
		}
	}
}

// checkOrder checks how the runs are made: the protocol, the restarts, the
// order of the variants and its seed, and the NUMA pinning.
func (c *Config) checkOrder(f *faults) {
	if _, err := pgbench.ParseProtocol(c.Protocol); err != nil {
		f.add(at("protocol"), "Invalid Protocol", "%v", err)
	}
	switch c.Restart {
	case RestartNever, RestartCell, RestartRun:
	default:
		f.add(at("restart"), "Invalid Restart", "%q, want never, cell or run", c.Restart)
	}
	switch c.Order {
	case OrderAlternate, OrderRandomized:
	default:
		f.add(at("order"), "Invalid Order", "%q, want alternate or randomized", c.Order)
	}
	if c.SeedSet && c.Order != OrderRandomized {
		f.add(at("seed"), "Seed Without Randomized Order", "%s only applies to %s randomized", ref("seed"), ref("order"))
	}
	if _, err := ParseNUMA(c.ServerNUMA); err != nil {
		f.add(at("server-numa"), "Invalid NUMA Pinning", "%v", err)
	}
	if _, err := ParseNUMA(c.ClientNUMA); err != nil {
		f.add(at("client-numa"), "Invalid NUMA Pinning", "%v", err)
	}
}

// checkObserve checks what a run records beside its rate: the latency
// log's sampling, the wait-event sampling and the profiles.
func (c *Config) checkObserve(f *faults) {
	if c.SamplingRate != "auto" {
		// NaN fails the comparison too.
		if r, err := strconv.ParseFloat(c.SamplingRate, 64); err != nil || !(r > 0 && r <= 1) {
			f.add(at("sampling-rate"), "Invalid Sampling Rate", "%q, want a fraction in (0, 1] or auto", c.SamplingRate)
		}
	}
	if w := c.WaitSampleInterval; w != 0 && (w < MinWaitSampleInterval || w > time.Minute) {
		f.add(at("wait-sample-interval"), "Invalid Wait Sample Interval", "%s: want 0 (never) or from %s to 1m; sampling faster than that costs throughput", w, MinWaitSampleInterval)
	}
	switch c.profileMode() {
	case ProfileNone:
	case ProfileOnePerCell, ProfileEveryRun:
		if c.ProfileFrequency < 1 || c.ProfileFrequency > MaxProfileFrequency {
			f.add(at("profile-frequency"), "Invalid Profile Frequency", "%d samples per second: want 1 to %d", c.ProfileFrequency, MaxProfileFrequency)
		}
	default:
		f.add(at("profile"), "Invalid Profile Mode", "%q, want none, one-per-cell or every-run", c.Profile)
	}
}

// runnerConnections is how many connections the runner opens beside the
// clients of a measured run: the wait-event sampler and the counters' (or
// the TPC-C driver's meter) session.
const runnerConnections = 2

// checkConnections refuses a variant whose max_connections cannot take
// the largest client count and the runner's own connections: the run
// would fail at its first connection. Everything connects as the
// superuser postgres, so the slots reserved for superusers count too.
func (c *Config) checkConnections() []error {
	maxClients := 0
	for _, n := range c.Clients {
		maxClients = max(maxClients, n)
	}
	var errs []error
	for i, v := range c.Variants {
		val, ok := c.settingsFor(v)["max_connections"]
		if !ok {
			continue
		}
		p := at("set")
		if _, own := v.Settings["max_connections"]; own {
			p = variantAt(i, "settings")
		}
		p.Key = "max_connections"
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil {
			errs = append(errs, Invalid(p, "Invalid max_connections", "variant %s: max_connections = %q is not a number", v.Name, val))
			continue
		}
		if need := maxClients + runnerConnections; n < need {
			errs = append(errs, Invalid(p, "max_connections Too Low",
				"variant %s: max_connections = %d cannot take %d clients and the runner's %d own connections: raise max_connections to at least %d",
				v.Name, n, maxClients, runnerConnections, need))
		}
	}
	return errs
}

// MinWaitSampleInterval is the shortest interval between two samples of
// pg_stat_activity; MaxProfileFrequency the most samples per second perf
// may take.
const (
	MinWaitSampleInterval = 10 * time.Millisecond
	MaxProfileFrequency   = 10000
)

// CheckHost checks what Validate cannot: that the campaign directory is
// given and that the files the definition names exist on this host.
func (c *Config) CheckHost() error {
	var errs []error
	if c.OutDir == "" {
		errs = append(errs, Invalid(at("out"), "Missing Campaign Directory", "%s is required", ref("out")))
	}
	for i, v := range c.Variants {
		if err := pgctl.CheckBinDir(v.BinDir); err != nil {
			errs = append(errs, Invalid(variantAt(i, "bin_dir"), "Incomplete Bin Dir", "variant %s: %v", v.Name, err))
		}
	}
	if c.Script != "" {
		if _, err := os.Stat(c.Script); err != nil {
			errs = append(errs, Invalid(at("script"), "Missing Script", "%v", err))
		}
	}
	return errors.Join(errs...)
}

// sortedKeys returns the keys of m in order, so messages and command lines
// built from maps are deterministic.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
