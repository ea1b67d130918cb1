// Package campaign is the A/B engine of pgbench-runner: it turns a campaign
// definition (variants, workload, order) into a plan of runs, prepares one
// data directory per variant, executes the runs one at a time with a journal
// that survives a crash, and hands the runs to internal/report for the
// statistics and the output files.
package campaign

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
)

// Order and restart policies.
const (
	OrderAlternate  = "alternate"
	OrderRandomized = "randomized"

	RestartNever = "never"
	RestartCell  = "cell"
	RestartRun   = "run"
)

// Variant is one side of the comparison: a bin directory, its own
// postgresql.conf settings on top of the shared ones, and huge pages.
type Variant struct {
	Name     string
	BinDir   string
	Settings map[string]string
	// HugePages is on, off or try; "" means try (PostgreSQL's default).
	HugePages string
}

// Config is a whole campaign definition.
type Config struct {
	Variants []Variant
	// Settings are shared by all variants; a variant's own win.
	Settings map[string]string

	Mode       string
	Script     string // custom mode: path of the pgbench script
	Scale      int
	Clients    []int
	Threads    string // a number or "auto" (min(clients, CPUs))
	Duration   time.Duration
	Iterations int
	Protocol   string
	Warmup     time.Duration
	// CheckpointBefore runs CHECKPOINT before each measured run.
	CheckpointBefore bool
	Restart          string
	Order            string
	// Seed drives the randomized order; SeedSet says the user gave it (a
	// resumed campaign without one keeps the journal's).
	Seed    int64
	SeedSet bool

	// ServerNUMA and ClientNUMA are numactl options without the leading
	// dashes, comma separated: "cpunodebind=0,membind=0".
	ServerNUMA string
	ClientNUMA string

	Alpha float64

	OutDir  string
	DataDir string // root of the per-variant data directories; "" = OutDir/data
	// Clone copies the first variant's loaded directory to variants whose
	// catalog version matches, instead of loading each one.
	Clone bool
	// Fresh ignores (and replaces) an existing journal.
	Fresh bool

	// Command is the command line that reproduces the campaign; when a
	// randomized order's seed comes from the clock or the journal, the
	// results add --seed N to it.
	Command []string
	// NumCPU overrides runtime.NumCPU for "auto" threads (tests).
	NumCPU int
	// HostFacts returns the host facts recorded with the results
	// (sysinfo.json); nil means sysinfo.Read("/").
	HostFacts func(ctx context.Context) (any, error) `json:"-"`
}

// ValidationError is a campaign definition that cannot run; Field names the
// flag or value at fault.
type ValidationError struct {
	Field string
	Msg   string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Msg }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// settingName is what a postgresql.conf parameter name may look like
// (custom ones have a dot: auto_explain.log_min_duration).
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

var variantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// numaOptions are the numactl policies a pinning spec may use.
var numaOptions = map[string]bool{
	"cpunodebind": true, "membind": true, "physcpubind": true, "interleave": true, "preferred": true, "localalloc": true,
}

// ParseNUMA turns "cpunodebind=0,membind=0" into numactl arguments.
func ParseNUMA(spec string) ([]string, error) {
	if spec == "" {
		return nil, nil
	}
	var args []string
	for _, part := range splitNUMA(spec) {
		k, v, hasV := strings.Cut(strings.TrimSpace(part), "=")
		if !numaOptions[k] {
			return nil, fmt.Errorf("unknown numactl option %q in %q (want cpunodebind=N, membind=N, physcpubind=CPUS, interleave=N, preferred=N or localalloc)", k, spec)
		}
		if k == "localalloc" {
			if hasV {
				return nil, fmt.Errorf("localalloc takes no value in %q", spec)
			}
			args = append(args, "--localalloc")
			continue
		}
		if !hasV || !regexp.MustCompile(`^[0-9][0-9,\-]*$|^all$`).MatchString(v) {
			return nil, fmt.Errorf("%s needs a node or cpu list, e.g. %s=0, in %q", k, k, spec)
		}
		args = append(args, "--"+k+"="+v)
	}
	return args, nil
}

// splitNUMA splits a pinning spec into options; a comma followed by a
// number continues the previous option's list (physcpubind=1,3).
func splitNUMA(spec string) []string {
	var parts []string
	for _, p := range strings.Split(spec, ",") {
		if len(parts) > 0 && p != "" && p[0] >= '0' && p[0] <= '9' {
			parts[len(parts)-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

// ParseVariant parses `name=stock,bin=DIR[,set=k=v;k=v][,huge_pages=on|off|try]`.
func ParseVariant(s string) (Variant, error) {
	v := Variant{Settings: map[string]string{}}
	for _, part := range splitVariant(s) {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return v, fmt.Errorf("variant %q: %q is not key=value", s, part)
		}
		switch k {
		case "name":
			v.Name = val
		case "bin":
			v.BinDir = val
		case "huge_pages":
			v.HugePages = val
		case "set":
			for _, kv := range strings.Split(val, ";") {
				if kv == "" {
					continue
				}
				sk, sv, ok := strings.Cut(kv, "=")
				if !ok || sk == "" {
					return v, fmt.Errorf("variant %q: setting %q is not k=v", s, kv)
				}
				v.Settings[strings.TrimSpace(sk)] = sv
			}
		default:
			return v, fmt.Errorf("variant %q: unknown key %q (want name, bin, set, huge_pages)", s, k)
		}
	}
	if v.Name == "" {
		return v, fmt.Errorf("variant %q: name= is missing", s)
	}
	if v.BinDir == "" {
		return v, fmt.Errorf("variant %q: bin= is missing", s)
	}
	return v, nil
}

// splitVariant splits on commas that start a new key=, so a set= value may
// still contain a comma that is not followed by a key (`set=search_path=a,b`).
func splitVariant(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && keyStart.MatchString(s[i+1:]) {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

var keyStart = regexp.MustCompile(`^[A-Za-z_]+=`)

// ParseClients parses "1,16,64".
func ParseClients(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("client count %q is not a number", f)
		}
		if n < 1 {
			return nil, fmt.Errorf("client count %d must be at least 1", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("client count %d is given twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// Defaults fills zero fields with their defaults.
func (c *Config) Defaults() {
	if c.Mode == "" {
		c.Mode = "select-only"
	}
	if c.Threads == "" {
		c.Threads = "auto"
	}
	if c.Protocol == "" {
		c.Protocol = "simple"
	}
	if c.Restart == "" {
		c.Restart = RestartNever
	}
	if c.Order == "" {
		c.Order = OrderAlternate
	}
	if c.Alpha == 0 {
		c.Alpha = 0.05
	}
	if c.DataDir == "" && c.OutDir != "" {
		c.DataDir = filepath.Join(c.OutDir, "data")
	}
	for i := range c.Variants {
		if c.Variants[i].HugePages == "" {
			c.Variants[i].HugePages = "try"
		}
	}
}

// Validate checks everything that can be checked before anything starts.
// Errors are *ValidationError naming the flag.
func (c *Config) Validate() error {
	if c.OutDir == "" {
		return invalid("--out", "is required")
	}
	switch len(c.Variants) {
	case 0:
		return invalid("--variant", "no variants: give two or more (--variant name=stock,bin=DIR --variant name=patched,bin=DIR)")
	case 1:
		return invalid("--variant", "only one variant (%s): an A/B campaign needs two or more", c.Variants[0].Name)
	}
	names := map[string]bool{}
	for _, v := range c.Variants {
		if !variantName.MatchString(v.Name) {
			return invalid("--variant", "variant name %q: use letters, digits, '.', '_' and '-'", v.Name)
		}
		if names[v.Name] {
			return invalid("--variant", "variant name %q is used twice", v.Name)
		}
		names[v.Name] = true
		switch v.HugePages {
		case "on", "off", "try":
		default:
			return invalid("--variant", "variant %s: huge_pages=%q, want on, off or try", v.Name, v.HugePages)
		}
		for _, prog := range []string{"postgres", "pgbench", "initdb", "pg_ctl", "psql"} {
			p := filepath.Join(v.BinDir, prog)
			st, err := os.Stat(p)
			if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				return invalid("--variant", "variant %s: bin dir %s has no %s executable", v.Name, v.BinDir, prog)
			}
		}
		if _, ok := v.Settings["huge_pages"]; ok {
			return invalid("--variant", "variant %s: set huge_pages with huge_pages=on|off|try, not set=", v.Name)
		}
		for k := range v.Settings {
			if !settingName.MatchString(k) {
				return invalid("--variant", "variant %s: setting name %q is not valid", v.Name, k)
			}
		}
	}
	if _, ok := c.Settings["huge_pages"]; ok {
		return invalid("--set", "huge_pages is per variant: use huge_pages=on|off|try in --variant")
	}
	if _, err := pgbench.ParseMode(c.Mode); err != nil {
		return invalid("--mode", "%v", err)
	}
	if c.Mode == "custom" {
		if c.Script == "" {
			return invalid("--script", "--mode custom needs --script FILE")
		}
		if _, err := os.Stat(c.Script); err != nil {
			return invalid("--script", "%v", err)
		}
	} else if c.Script != "" {
		return invalid("--script", "only with --mode custom")
	}
	if c.Scale < 1 {
		return invalid("--scale", "%d must be at least 1", c.Scale)
	}
	if len(c.Clients) == 0 {
		return invalid("--clients", "no client counts")
	}
	seenClients := map[int]bool{}
	for _, n := range c.Clients {
		if n < 1 {
			return invalid("--clients", "client count %d must be at least 1", n)
		}
		if seenClients[n] {
			return invalid("--clients", "client count %d is given twice", n)
		}
		seenClients[n] = true
	}
	if c.Threads != "auto" {
		if n, err := strconv.Atoi(c.Threads); err != nil || n < 1 {
			return invalid("--threads", "%q, want a positive number or auto", c.Threads)
		}
	}
	if c.Duration <= 0 {
		return invalid("--duration", "%v must be positive", c.Duration)
	}
	if c.Duration%time.Second != 0 {
		return invalid("--duration", "%v: pgbench runs whole seconds", c.Duration)
	}
	if c.Warmup < 0 || c.Warmup%time.Second != 0 {
		return invalid("--warmup", "%v: want zero or whole seconds", c.Warmup)
	}
	if c.Iterations < 1 {
		return invalid("--iterations", "%d must be at least 1", c.Iterations)
	}
	if _, err := pgbench.ParseProtocol(c.Protocol); err != nil {
		return invalid("--protocol", "%v", err)
	}
	switch c.Restart {
	case RestartNever, RestartCell, RestartRun:
	default:
		return invalid("--restart", "%q, want never, cell or run", c.Restart)
	}
	switch c.Order {
	case OrderAlternate, OrderRandomized:
	default:
		return invalid("--order", "%q, want alternate or randomized", c.Order)
	}
	if _, err := ParseNUMA(c.ServerNUMA); err != nil {
		return invalid("--server-numa", "%v", err)
	}
	if _, err := ParseNUMA(c.ClientNUMA); err != nil {
		return invalid("--client-numa", "%v", err)
	}
	if !(c.Alpha > 0 && c.Alpha < 1) {
		return invalid("--alpha", "%v must be between 0 and 1", c.Alpha)
	}
	for k := range c.Settings {
		if !settingName.MatchString(k) {
			return invalid("--set", "setting name %q is not valid", k)
		}
	}
	return nil
}

// IsValidation reports whether err is a *ValidationError.
func IsValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}

// Step is one planned run.
type Step struct {
	Seq       int // 1-based
	Variant   string
	Clients   int
	Iteration int // 1-based
}

// Plan returns the runs in the order they execute. Alternate: at each
// client count, for each iteration, every variant once, with the starting
// variant rotated each iteration so none always goes first (ABAB.. for two
// becomes AB BA AB ...). Randomized: the same set of runs, shuffled within
// each client count with Seed.
func (c *Config) Plan() []Step {
	var steps []Step
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x70676265))
	n := len(c.Variants)
	for _, clients := range c.Clients {
		var cell []Step
		for it := 1; it <= c.Iterations; it++ {
			for j := 0; j < n; j++ {
				v := c.Variants[(j+it-1)%n]
				cell = append(cell, Step{Variant: v.Name, Clients: clients, Iteration: it})
			}
		}
		if c.Order == OrderRandomized {
			rng.Shuffle(len(cell), func(i, j int) { cell[i], cell[j] = cell[j], cell[i] })
			// Iteration numbers follow the order each variant ran in.
			count := map[string]int{}
			for i := range cell {
				count[cell[i].Variant]++
				cell[i].Iteration = count[cell[i].Variant]
			}
		}
		steps = append(steps, cell...)
	}
	for i := range steps {
		steps[i].Seq = i + 1
	}
	return steps
}

// threads is the -j for a client count.
func (c *Config) threads(clients int) int {
	if c.Threads != "auto" {
		n, _ := strconv.Atoi(c.Threads)
		return min(n, clients)
	}
	cpus := c.NumCPU
	if cpus <= 0 {
		cpus = runtime.NumCPU()
	}
	return max(1, min(clients, cpus))
}

// runOptions is the measured run at a client count, without its log.
func (c *Config) runOptions(clients int) pgbench.RunOptions {
	return pgbench.RunOptions{
		Mode: pgbench.Mode(c.Mode), Script: c.Script, Clients: clients, Threads: c.threads(clients),
		Duration: c.Duration, Protocol: c.Protocol,
	}
}

// reproduceCommand is Command with the resolved seed of a randomized order
// the user did not seed: without it the command would shuffle differently.
func (c *Config) reproduceCommand() []string {
	if c.Order != OrderRandomized || c.SeedSet || len(c.Command) == 0 {
		return c.Command
	}
	return append(c.Command[:len(c.Command):len(c.Command)], "--seed", strconv.FormatInt(c.Seed, 10))
}

// settingsFor is the effective postgresql.conf settings of a variant.
func (c *Config) settingsFor(v Variant) map[string]string {
	m := map[string]string{}
	for k, val := range c.Settings {
		m[k] = val
	}
	for k, val := range v.Settings {
		m[k] = val
	}
	m["huge_pages"] = v.HugePages
	return m
}
