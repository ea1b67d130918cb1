// Package pgbench builds pgbench command lines and parses what pgbench
// writes: its summary on stdout, its progress lines on stderr (-P) and its
// per-transaction logs (--log), for PostgreSQL 13 to 18.
package pgbench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Mode is the workload pgbench runs.
type Mode string

// The workloads: pgbench's built-in scripts, or a script file.
const (
	ModeSelectOnly   Mode = "select-only"
	ModeTPCB         Mode = "tpcb"
	ModeSimpleUpdate Mode = "simple-update"
	ModeCustom       Mode = "custom"
)

// Modes lists the valid modes in the order messages show them.
var Modes = []Mode{ModeSelectOnly, ModeTPCB, ModeSimpleUpdate, ModeCustom}

// Protocols lists the valid query protocols (pgbench -M).
var Protocols = []string{"simple", "extended", "prepared"}

// ParseMode returns the Mode named s; the error lists the valid modes.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown pgbench mode %q: want one of %s", s, strings.Join(names, ", "))
}

// ParseProtocol checks a query protocol name (simple, extended, prepared).
func ParseProtocol(s string) (string, error) {
	for _, p := range Protocols {
		if p == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown pgbench protocol %q: want one of %s", s, strings.Join(Protocols, ", "))
}

// builtin maps a mode to pgbench's built-in script name (-b, since 9.6).
func (m Mode) builtin() string {
	switch m {
	case ModeSelectOnly:
		return "select-only"
	case ModeTPCB:
		return "tpcb-like"
	case ModeSimpleUpdate:
		return "simple-update"
	}
	return ""
}

// RunOptions describes one timed pgbench run.
type RunOptions struct {
	Mode Mode
	// Script is the path of the script file for ModeCustom.
	Script  string
	Clients int
	// Threads is pgbench -j; 0 leaves pgbench's default (one thread).
	Threads  int
	Duration time.Duration
	// Protocol is pgbench -M; "" means pgbench's default (simple).
	Protocol string
	// LogPrefix, when set, turns on the per-transaction log:
	// --log --log-prefix=LogPrefix, one file per thread (PREFIX.PID[.N]).
	LogPrefix string
	// SamplingRate is --sampling-rate; 0 logs every transaction.
	SamplingRate float64
	// Progress is -P: a progress line on stderr every Progress, whole
	// seconds; 0 for none. A measured run does without: to print on time,
	// pgbench's first thread then waits on its sockets with a timeout after
	// every transaction, which cost 1 to 2% of select-only TPS on a 2-CPU
	// virtual machine. The per-second series comes from the log instead
	// (LogSummary.TPSSeries).
	Progress time.Duration
	// NoVacuum is -n: skip the vacuum pgbench does before the run.
	NoVacuum bool
	// ExtraArgs go after everything else, unchecked.
	ExtraArgs []string
}

// Validate checks the options before anything starts, naming the field at fault.
func (o RunOptions) Validate() error {
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return err
	}
	if o.Mode == ModeCustom && o.Script == "" {
		return fmt.Errorf("pgbench mode custom needs a script file")
	}
	if o.Mode != ModeCustom && o.Script != "" {
		return fmt.Errorf("pgbench script %s given with mode %s: a script needs mode custom", o.Script, o.Mode)
	}
	if o.Clients < 1 {
		return fmt.Errorf("pgbench clients = %d: want at least 1", o.Clients)
	}
	if o.Threads < 0 {
		return fmt.Errorf("pgbench threads = %d: want at least 1 (or 0 for the default)", o.Threads)
	}
	if o.Threads > o.Clients {
		// pgbench refuses more threads than clients.
		return fmt.Errorf("pgbench threads = %d exceeds clients = %d", o.Threads, o.Clients)
	}
	if o.Duration < time.Second {
		return fmt.Errorf("pgbench duration %s: want at least 1s", o.Duration)
	}
	if o.Duration%time.Second != 0 {
		// -T takes whole seconds; rounding silently would misreport the run.
		return fmt.Errorf("pgbench duration %s: want whole seconds (pgbench -T takes seconds)", o.Duration)
	}
	if o.Protocol != "" {
		if _, err := ParseProtocol(o.Protocol); err != nil {
			return err
		}
	}
	if math.IsNaN(o.SamplingRate) || o.SamplingRate < 0 || o.SamplingRate > 1 {
		return fmt.Errorf("pgbench sampling rate %v: want a fraction in (0, 1], or 0 for every transaction", o.SamplingRate)
	}
	if o.SamplingRate > 0 && o.LogPrefix == "" {
		return fmt.Errorf("pgbench sampling rate %v needs a log prefix (sampling applies to --log)", o.SamplingRate)
	}
	if o.Progress < 0 || o.Progress%time.Second != 0 {
		return fmt.Errorf("pgbench progress interval %s: want whole seconds (pgbench -P takes seconds), or 0 for none", o.Progress)
	}
	return nil
}

// Args returns pgbench's arguments for the run, without the program name
// and without connection arguments (the caller adds -h, -p, -U and dbname).
func (o RunOptions) Args() []string {
	var a []string
	if o.Mode == ModeCustom {
		a = append(a, "-f", o.Script)
	} else {
		a = append(a, "-b", o.Mode.builtin())
	}
	a = append(a, "-c", strconv.Itoa(o.Clients))
	if o.Threads > 0 {
		a = append(a, "-j", strconv.Itoa(o.Threads))
	}
	a = append(a, "-T", strconv.FormatInt(int64(o.Duration/time.Second), 10))
	if o.Protocol != "" {
		a = append(a, "-M", o.Protocol)
	}
	if o.NoVacuum {
		a = append(a, "-n")
	}
	if o.Progress > 0 {
		a = append(a, "-P", strconv.FormatInt(int64(o.Progress/time.Second), 10))
	}
	if o.LogPrefix != "" {
		a = append(a, "--log", "--log-prefix="+o.LogPrefix)
		if o.SamplingRate > 0 {
			a = append(a, "--sampling-rate="+strconv.FormatFloat(o.SamplingRate, 'g', -1, 64))
		}
	}
	return append(a, o.ExtraArgs...)
}

// InitArgs returns the arguments that load the pgbench tables at a scale
// (-i -s N), quietly (-q: one progress line every 5 s, not every 100k rows).
func InitArgs(scale int) []string {
	return []string{"-i", "-s", strconv.Itoa(scale), "-q"}
}
