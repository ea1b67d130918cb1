package tpcc

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// The campaign engine runs the workload as `pgbench-runner tpcc ACTION
// flags`, a process of its own that the client's NUMA pinning and CPU
// accounting apply to as they do to pgbench. Options.Args encodes the
// flags, BindFlags and Parse decode them, in this one place.

// Actions of `pgbench-runner tpcc`.
const (
	ActionLoad  = "load"
	ActionRun   = "run"
	ActionCheck = "check"
)

// Options are the flags of every action; each reads the ones it needs.
type Options struct {
	Conn
	Warehouses int
	// Clients and Duration are a run's; Threads a load's.
	Clients  int
	Duration time.Duration
	Threads  int
	Seed     uint64
	// AfterLoad makes a check include 3.3.2.11.
	AfterLoad bool
}

// BindFlags declares the options' flags in fs, bound to o.
func BindFlags(fs *pflag.FlagSet, o *Options) {
	fs.StringVar(&o.Host, "host", "", "the server's Unix socket directory (or host name; a password, if the server asks for one, comes from PGPASSWORD)")
	fs.IntVar(&o.Port, "port", 5432, "the server's port")
	fs.StringVar(&o.User, "user", "postgres", "database user")
	fs.StringVar(&o.DB, "dbname", "postgres", "database")
	fs.IntVar(&o.Warehouses, "warehouses", 0, "warehouses of the dataset (at least 1)")
	fs.IntVar(&o.Clients, "clients", 1, "run: virtual users, one connection each")
	fs.DurationVar(&o.Duration, "duration", time.Minute, "run: how long to run")
	fs.IntVar(&o.Threads, "threads", 0, "load: connections that load warehouses in parallel (0: one per CPU)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the random inputs (0: from the clock)")
	fs.BoolVar(&o.AfterLoad, "after-load", false, "check: include condition 3.3.2.11, which holds only before the first delivery")
}

// Args encodes o as the flags of action, every one of them, so that Parse
// gives o back.
func (o Options) Args(action string) []string {
	a := []string{action,
		"--host=" + o.Host, "--port=" + strconv.Itoa(o.Port), "--user=" + o.User, "--dbname=" + o.DB,
		"--warehouses=" + strconv.Itoa(o.Warehouses), "--clients=" + strconv.Itoa(o.Clients),
		"--duration=" + o.Duration.String(), "--threads=" + strconv.Itoa(o.Threads),
		"--seed=" + strconv.FormatUint(o.Seed, 10), "--after-load=" + strconv.FormatBool(o.AfterLoad)}
	return a
}

// Parse decodes an action and its flags, as Args writes them.
func Parse(args []string) (string, Options, error) {
	var o Options
	fs := pflag.NewFlagSet("tpcc", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return "", o, err
	}
	if fs.NArg() != 1 {
		return "", o, fmt.Errorf("want one action (%s, %s or %s), got %q", ActionLoad, ActionRun, ActionCheck, fs.Args())
	}
	return fs.Arg(0), o, o.Validate(fs.Arg(0))
}

// Validate checks the options an action needs.
func (o Options) Validate(action string) error {
	switch action {
	case ActionLoad, ActionRun, ActionCheck:
	default:
		return fmt.Errorf("unknown action %q: want %s, %s or %s", action, ActionLoad, ActionRun, ActionCheck)
	}
	if o.Host == "" {
		return fmt.Errorf("--host is required: the server's socket directory")
	}
	if o.Warehouses < 1 {
		return fmt.Errorf("--warehouses must be at least 1, not %d", o.Warehouses)
	}
	if action == ActionRun && (o.Clients < 1 || o.Duration <= 0) {
		return fmt.Errorf("a run needs --clients of at least 1 and a positive --duration, not %d and %v", o.Clients, o.Duration)
	}
	return nil
}

// Do carries out an action and returns its result: a *LoadResult,
// *RunResult or *CheckResult. progress (may be nil) hears about a load's
// phases.
func Do(ctx context.Context, action string, o Options, progress func(string)) (any, error) {
	if err := o.Validate(action); err != nil {
		return nil, err
	}
	switch action {
	case ActionLoad:
		return Load(ctx, LoadOptions{Conn: o.Conn, Warehouses: o.Warehouses, Threads: o.Threads, Seed: o.Seed, Progress: progress})
	case ActionRun:
		return Run(ctx, RunOptions{Conn: o.Conn, Warehouses: o.Warehouses, Clients: o.Clients, Duration: o.Duration, Seed: o.Seed})
	default:
		return Check(ctx, CheckOptions{Conn: o.Conn, Warehouses: o.Warehouses, AfterLoad: o.AfterLoad})
	}
}
