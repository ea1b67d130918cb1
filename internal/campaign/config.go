// Package campaign is the A/B engine of pgbench-runner: it turns a campaign
// definition (variants, workload, order) into a plan of runs, prepares one
// data directory per variant, executes the runs one at a time with a journal
// that survives a crash, and hands the runs to internal/report for the
// statistics and the output files.
package campaign

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
)

// Order and restart policies.
const (
	OrderAlternate  = "alternate"
	OrderRandomized = "randomized"

	ProfileNone       = "none"
	ProfileOnePerCell = "one-per-cell"
	ProfileEveryRun   = "every-run"

	// ModeTPCC is TPC-C through internal/tpcc rather than a pgbench mode.
	ModeTPCC = "tpcc"

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

// Config is a whole campaign definition. Fields describes its settings and
// their defaults; Validate checks it; Args and Decode carry it to the runner
// and back. A new kind of setting (an adaptive number of iterations, a
// bisect) is a new field here and a row in Fields.
type Config struct {
	Variants []Variant
	// Settings are shared by all variants; a variant's own win.
	Settings map[string]string

	Mode   string
	Script string // custom mode: path of the pgbench script
	Scale  int
	// Warehouses is the size of a TPC-C dataset (mode tpcc only).
	Warehouses int
	Clients    []int
	Threads    string // a number or "auto" (min(clients, CPUs))
	Duration   time.Duration
	// Iterations is the number of runs per variant in every cell; with
	// IterationsAuto each cell chooses its own (see Adaptive).
	Iterations     int
	IterationsAuto bool
	// TargetCIPct, MinIterations and MaxIterations drive IterationsAuto:
	// every cell runs MinIterations pairs, then as many more as its
	// interval needs to be at most ±TargetCIPct wide, never more than
	// MaxIterations in all.
	TargetCIPct   float64
	MinIterations int
	MaxIterations int
	Protocol      string
	// Warmup is the unrecorded pgbench run after each server start, before
	// the first measured run on it; WarmupAuto makes it AutoWarmup(Duration).
	Warmup     time.Duration
	WarmupAuto bool
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
	// ClientHost, when set, is the host every pgbench runs on, reached
	// over SSH as [user@]host[:port], its key pinned by ClientHostKey;
	// ClientBinDir is its directory with pgbench (see client.go).
	ClientHost    string
	ClientHostKey string
	ClientBinDir  string
	// ClientKeyFile is where the SSH private key of the client host is
	// read ("-": standard input) unless ClientKey holds it: how this
	// process reaches the host, not part of the campaign.
	ClientKeyFile string
	ClientKey     []byte `json:"-"`
	// SamplingRate is the share of transactions a measured run logs: a
	// fraction in (0, 1], or "auto" (see samplingRate).
	SamplingRate string

	// Counters records each measured run's OS and PostgreSQL counters and
	// the client's CPU use; WaitSampleInterval is how often the wait
	// events of active backends are sampled meanwhile (0: never).
	Counters           bool
	WaitSampleInterval time.Duration
	// Profile is ProfileNone, ProfileOnePerCell or ProfileEveryRun;
	// ProfileFrequency perf's samples per second.
	Profile          string
	ProfileFrequency int

	Alpha float64

	OutDir  string
	DataDir string // root of the per-variant data directories; "" = OutDir/data
	// Clone copies the first variant's loaded directory to variants whose
	// catalog version matches, instead of loading each one.
	Clone bool
	// Fresh ignores (and replaces) an existing journal.
	Fresh bool
	// WaitHost bounds each wait for the host's lock (see internal/hostlock);
	// 0 waits until the context ends. Like Fresh, it is how this process
	// runs, not part of the campaign.
	WaitHost time.Duration

	// Command is the command line that reproduces the campaign; when a
	// randomized order's seed comes from the clock or the journal, the
	// results add --seed N to it.
	Command []string
	// NumCPU overrides runtime.NumCPU for "auto" threads (tests).
	NumCPU int
	// LogLines overrides MaxLogLines for the "auto" sampling rate (tests).
	LogLines int
	// HostFacts returns the host facts recorded with the results
	// (sysinfo.json); nil means sysinfo.Read("/").
	HostFacts func(ctx context.Context) (any, error) `json:"-"`
	// ClientPrefix goes before the client's command line, ahead of its
	// pinning (tests: a wrapper that puts pgbench in a throttled cgroup).
	ClientPrefix []string `json:"-"`
	// TPCCDriver is the command that runs `pgbench-runner tpcc` for mode
	// tpcc; nil means this executable (tests run themselves).
	TPCCDriver []string `json:"-"`
}

// tpcc says the campaign runs TPC-C rather than pgbench.
func (c *Config) tpcc() bool { return c.Mode == ModeTPCC }

// metric is the campaign's figure of merit: NOPM for TPC-C, else TPS.
func (c *Config) metric() string { return Definition{Mode: c.Mode}.metric() }

// Defaults fills the zero fields that have a default in Fields (and a
// variant's huge pages, and the data directory under OutDir). Numbers keep
// a zero, which Validate refuses: "--scale 0" is a mistake, not a request
// for the default.
func (c *Config) Defaults() {
	for _, f := range []struct {
		p    *string
		flag string
	}{{&c.Mode, "mode"}, {&c.Threads, "threads"}, {&c.Protocol, "protocol"}, {&c.Restart, "restart"}, {&c.Order, "order"}, {&c.SamplingRate, "sampling-rate"}, {&c.Profile, "profile"}} {
		if *f.p == "" {
			*f.p = FieldByFlag(f.flag).Default
		}
	}
	if c.Alpha == 0 {
		c.Alpha, _ = strconv.ParseFloat(FieldByFlag("alpha").Default, 64)
	}
	// A frequency matters only to a campaign that profiles: unset is the
	// default, not a mistake.
	if c.ProfileFrequency == 0 {
		c.ProfileFrequency, _ = strconv.Atoi(FieldByFlag("profile-frequency").Default)
	}
	if c.WarmupAuto {
		c.Warmup = AutoWarmup(c.Duration)
	}
	if c.IterationsAuto {
		c.Iterations = 0
		for _, f := range []struct {
			p    *int
			flag string
		}{{&c.MinIterations, "min-iterations"}, {&c.MaxIterations, "max-iterations"}} {
			if *f.p == 0 {
				*f.p, _ = strconv.Atoi(FieldByFlag(f.flag).Default)
			}
		}
		if c.TargetCIPct == 0 {
			c.TargetCIPct, _ = strconv.ParseFloat(FieldByFlag("target-ci").Default, 64)
		}
	}
	if c.DataDir == "" && c.OutDir != "" {
		c.DataDir = filepath.Join(c.OutDir, "data")
	}
	if c.Settings == nil {
		c.Settings = map[string]string{}
	}
	for i := range c.Variants {
		if c.Variants[i].HugePages == "" {
			c.Variants[i].HugePages = FieldByAttribute("variant.huge_pages").Default
		}
		if c.Variants[i].Settings == nil {
			c.Variants[i].Settings = map[string]string{}
		}
	}
}

// AutoWarmup is the warm-up of --warmup auto for measured runs of length
// d: a quarter of a run, in whole seconds, from 1 s to 60 s. A server just
// started has cold shared buffers and caches; without a warm-up its first
// run is slower, and the alternating order gives the variants unequal
// numbers of such runs.
func AutoWarmup(d time.Duration) time.Duration {
	w := (d/4 + time.Second - 1) / time.Second * time.Second
	return min(max(w, time.Second), time.Minute)
}

// planIterations is the number of iterations Plan lays out per variant and
// cell: the fixed count, or an adaptive campaign's maximum (a cell stops
// early when its interval is narrow enough).
func (c *Config) planIterations() int {
	if c.IterationsAuto {
		return c.MaxIterations
	}
	return c.Iterations
}

// Step is one planned run.
type Step struct {
	Seq       int // 1-based
	Variant   string
	Clients   int
	Iteration int // 1-based; 0 for the extra profiled run of one-per-cell
	// Profiled says perf records the server during the run.
	Profiled bool
}

// Plan returns the runs in the order they execute. Alternate: at each
// client count, for each iteration, every variant once, with the starting
// variant rotated each iteration so none always goes first (ABAB.. for two
// becomes AB BA AB ...). Randomized: the same set of runs, shuffled within
// each client count with Seed. An adaptive campaign plans its maximum.
func (c *Config) Plan() []Step {
	var steps []Step
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x70676265))
	n := len(c.Variants)
	for _, clients := range c.Clients {
		var cell []Step
		for it := 1; it <= c.planIterations(); it++ {
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
		if c.Profile == ProfileEveryRun {
			for i := range cell {
				cell[i].Profiled = true
			}
		}
		steps = append(steps, cell...)
	}
	// One-per-cell profiles come after every measured run, so a campaign's
	// measured runs are the same whether it profiles or not: each variant
	// once per client count, in the order of the first iteration.
	if c.Profile == ProfileOnePerCell {
		for _, clients := range c.Clients {
			for _, v := range c.Variants {
				steps = append(steps, Step{Variant: v.Name, Clients: clients, Profiled: true})
			}
		}
	}
	for i := range steps {
		steps[i].Seq = i + 1
	}
	return steps
}

// profileMode is Profile, "" read as none.
func (c *Config) profileMode() string {
	if c.Profile == "" {
		return ProfileNone
	}
	return c.Profile
}

// profiling says the campaign records perf profiles.
func (c *Config) profiling() bool { return c.profileMode() != ProfileNone }

// startsServer says whether the run st starts a server when prev ran
// just before it: the first run, a switch of variant (one server runs at a
// time), or the restart policy. The engine also starts one when none is
// running (a resumed campaign).
func (c *Config) startsServer(st Step, prev *Step) bool {
	if prev == nil || prev.Variant != st.Variant {
		return true
	}
	switch c.Restart {
	case RestartRun:
		return true
	case RestartCell:
		return prev.Clients != st.Clients
	}
	return false
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

// runOptions is the workload of a run at a client count: a warm-up runs
// it as it is, a measured run adds its log and progress lines (measuredRun).
func (c *Config) runOptions(clients int) pgbench.RunOptions {
	return pgbench.RunOptions{
		Mode: pgbench.Mode(c.Mode), Script: c.Script, Clients: clients, Threads: c.threads(clients),
		Duration: c.Duration, Protocol: c.Protocol,
	}
}

// maxLogLines is the log bound of the auto sampling rate: MaxLogLines,
// unless a test sets LogLines.
func (c *Config) maxLogLines() int {
	if c.LogLines > 0 {
		return c.LogLines
	}
	return MaxLogLines
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
