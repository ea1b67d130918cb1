package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/spf13/pflag"
)

type abCmd struct{}

func init() { register(abCmd{}) }

func (abCmd) Name() string { return "ab" }
func (abCmd) Synopsis() string {
	return "run an A/B pgbench campaign across variants (builds, settings, huge pages) with a resumable journal"
}

// abFlags holds the raw flag values before they become a campaign.Config.
type abFlags struct {
	variants     []string
	sets         []string
	clients      string
	seed         int64
	progressJSON bool
	removeData   bool
	resume       bool
}

// parseAB turns the command line into a campaign definition. Every error is
// a usage error naming the flag, returned before anything starts.
func parseAB(fs interface {
	Changed(string) bool
}, cfg *campaign.Config, f *abFlags) error {
	for _, s := range f.variants {
		v, err := campaign.ParseVariant(s)
		if err != nil {
			return usagef("--variant: %v", err)
		}
		cfg.Variants = append(cfg.Variants, v)
	}
	cfg.Settings = map[string]string{}
	for _, s := range f.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return usagef("--set %q: want k=v, e.g. shared_buffers=1GB", s)
		}
		cfg.Settings[k] = v
	}
	cl, err := campaign.ParseClients(f.clients)
	if err != nil {
		return usagef("--clients %q: %v", f.clients, err)
	}
	cfg.Clients = cl
	cfg.Seed, cfg.SeedSet = f.seed, fs.Changed("seed")
	if cfg.SeedSet && cfg.Order != campaign.OrderRandomized {
		return usagef("--seed only applies to --order randomized")
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// flagSet declares the ab flags into cfg and f.
func (c abCmd) flagSet(o *output, cfg *campaign.Config, f *abFlags) *pflag.FlagSet {
	fs := newFlagSet(c.Name(), c.Synopsis(), o)
	fs.StringVar(&cfg.OutDir, "out", "", "campaign directory: journal, results, reports and raw logs (required)")
	fs.StringArrayVar(&f.variants, "variant", nil, "a variant: name=N,bin=DIR[,set=k=v;k=v][,huge_pages=on|off|try] (two or more; the first is the baseline)")
	fs.StringArrayVar(&f.sets, "set", nil, "postgresql.conf setting shared by all variants, k=v (repeatable)")
	fs.StringVar(&cfg.Mode, "mode", "select-only", "workload: select-only, tpcb, simple-update or custom")
	fs.StringVar(&cfg.Script, "script", "", "pgbench script for --mode custom")
	fs.IntVar(&cfg.Scale, "scale", 10, "pgbench scale factor (-s) of the dataset")
	fs.StringVar(&f.clients, "clients", "1", "client counts, comma separated, e.g. 1,16,64")
	fs.StringVar(&cfg.Threads, "threads", "auto", "pgbench threads (-j): a number, or auto = min(clients, CPUs)")
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "length of each measured run (whole seconds)")
	fs.IntVar(&cfg.Iterations, "iterations", 5, "runs per variant and client count (3 against 3 can never reach p < 0.05; 5 against 5 gives p = 0.008 at best)")
	fs.StringVar(&cfg.Protocol, "protocol", "simple", "query protocol: simple, extended or prepared")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "unrecorded pgbench run before each measured run")
	fs.BoolVar(&cfg.CheckpointBefore, "checkpoint-before", false, "CHECKPOINT before each measured run")
	fs.StringVar(&cfg.Restart, "restart", "never", "restart servers: never (only to switch variants), cell (at each new cell) or run (before every run)")
	fs.StringVar(&cfg.Order, "order", "alternate", "run order: alternate (ABAB.., first variant rotated each iteration) or randomized")
	fs.Int64Var(&f.seed, "seed", 0, "seed of --order randomized (recorded; default from the clock)")
	fs.StringVar(&cfg.ServerNUMA, "server-numa", "", "numactl pinning of the postmaster, e.g. cpunodebind=0,membind=0")
	fs.StringVar(&cfg.ClientNUMA, "client-numa", "", "numactl pinning of pgbench, e.g. cpunodebind=1,membind=1")
	fs.Float64Var(&cfg.Alpha, "alpha", 0.05, "significance level of the verdicts")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "root of the per-variant data directories (default OUT/data)")
	fs.BoolVar(&cfg.Clone, "clone", false, "copy the first variant's loaded data directory to variants with the same catalog version")
	fs.BoolVar(&f.resume, "resume", false, "resume from OUT/journal.jsonl (the default when it exists)")
	fs.BoolVar(&cfg.Fresh, "fresh", false, "ignore an existing journal and start over (the old one is kept aside)")
	fs.BoolVar(&f.progressJSON, "progress-json", false, "progress events on stderr, one JSON object per line")
	fs.BoolVar(&f.removeData, "remove-data", false, "stop the campaign's servers and delete its data directories (not the reports), then exit")
	return fs
}

func (c abCmd) Run(ctx context.Context, args []string) error {
	var o output
	var cfg campaign.Config
	var f abFlags
	fs := c.flagSet(&o, &cfg, &f)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if cfg.OutDir == "" {
		return o.emit(nil, usagef("--out is required"), nil)
	}
	if f.removeData {
		removed, err := campaign.RemoveData(ctx, cfg.OutDir, cfg.DataDir)
		v := map[string]any{"removed": nonNil(removed)}
		return o.emit(v, err, func(w io.Writer) {
			for _, d := range removed {
				fmt.Fprintf(w, "removed %s\n", d)
			}
		})
	}
	if f.resume && cfg.Fresh {
		return o.emit(nil, usagef("--resume and --fresh contradict each other"), nil)
	}
	if err := parseAB(fs, &cfg, &f); err != nil {
		return o.emit(nil, err, nil)
	}
	cfg.Command = reproduce(fs, args)
	cfg.HostFacts = func(ctx context.Context) (any, error) {
		in, err := sysinfo.Read("/")
		if err != nil {
			return nil, err
		}
		crossCheckNumactl(ctx, &in.NUMACtl)
		return in, nil
	}

	onEvent := textProgress(o.stderr)
	if f.progressJSON {
		onEvent = jsonProgress(o.stderr)
	}
	res, err := campaign.Execute(ctx, &cfg, onEvent)
	var ue *campaign.UnmetError
	switch {
	case err == nil:
	case campaign.IsValidation(err):
		err = usagef("%v", err)
	case errors.As(err, &ue) && ctx.Err() == nil:
		err = unmet(err)
	}
	return o.emit(res, err, func(w io.Writer) {
		report.WriteMarkdown(w, res)
		fmt.Fprintf(w, "\nresults in %s\n", cfg.OutDir)
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// notReproduced are the flags that only change how a run reports or
// whether it resumes, so the command that reproduces a campaign leaves them
// out whatever their spelling (--fresh, --fresh=true).
var notReproduced = map[string]bool{"json": true, "progress-json": true, "resume": true, "fresh": true, "remove-data": true}

// reproduce is the command line that runs the same campaign again, without
// the flags in notReproduced. fs (the parsed flag set) tells which flags
// take their value from the next argument, so a value is never mistaken for
// a flag. The campaign adds --seed once it resolves a randomized order's
// seed from the clock or the journal.
func reproduce(fs *pflag.FlagSet, args []string) []string {
	cmd := []string{"pgbench-runner", "ab"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			cmd = append(cmd, args[i:]...)
			break
		}
		name, hasValue := "", false
		if rest, ok := strings.CutPrefix(a, "--"); ok {
			name, _, hasValue = strings.Cut(rest, "=")
		}
		if name == "" {
			cmd = append(cmd, a)
			continue
		}
		takesNext := false
		if fl := fs.Lookup(name); fl != nil && !hasValue && fl.NoOptDefVal == "" {
			takesNext = true
		}
		if notReproduced[name] {
			if takesNext {
				i++
			}
			continue
		}
		cmd = append(cmd, a)
		if takesNext && i+1 < len(args) {
			i++
			cmd = append(cmd, args[i])
		}
	}
	return cmd
}

// jsonProgress writes each event as one JSON line.
func jsonProgress(w io.Writer) func(campaign.Event) {
	var mu sync.Mutex
	return func(e campaign.Event) {
		b, err := json.Marshal(e)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.Write(append(b, '\n'))
	}
}

// textProgress writes one line per run with the elapsed time and an ETA,
// and a progress bar when w is a terminal.
func textProgress(w io.Writer) func(campaign.Event) {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	barShown := false
	clear := func() {
		if barShown {
			fmt.Fprint(w, "\r\033[K")
			barShown = false
		}
	}
	bar := func(done, total int) {
		if !tty || total == 0 {
			return
		}
		const width = 30
		n := done * width / total
		fmt.Fprintf(w, "[%s%s] %d/%d", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
		barShown = true
	}
	return func(e campaign.Event) {
		clear()
		switch e.Event {
		case "phase":
			fmt.Fprintf(w, "==> %s\n", e.Message)
		case "warning":
			fmt.Fprintf(w, "warning: %s\n", e.Message)
		case "run_skipped":
			fmt.Fprintf(w, "[%d/%d] %s c%d i%d: in the journal (%.1f tps)\n", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration, deref(e.TPS))
			bar(e.Seq, e.Total)
		case "run_start":
			bar(e.Seq-1, e.Total)
		case "run_done":
			fmt.Fprintf(w, "[%d/%d] %s c%d i%d: %.1f tps in %.1fs, elapsed %s, ETA %s\n", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration,
				deref(e.TPS), deref(e.Seconds), dur(deref(e.ElapsedSeconds)), dur(deref(e.ETASeconds)))
			bar(e.Seq, e.Total)
		case "done":
			fmt.Fprintf(w, "done in %s\n", dur(deref(e.WallSeconds)))
		}
	}
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func dur(s float64) string { return (time.Duration(s) * time.Second).Round(time.Second).String() }
