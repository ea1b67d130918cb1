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

// abFlags holds the flags that are not part of the campaign's definition,
// and the decoder of those that are.
type abFlags struct {
	campaign      *campaign.Flags
	progressJSON  bool
	removeData    bool
	keepReportsAs string
	removeReports bool
	resume        bool
}

// parseAB turns the parsed command line into a campaign definition and
// checks it. Every error is a usage error naming the flag, returned before
// anything starts.
func parseAB(cfg *campaign.Config, f *abFlags) error {
	if err := f.campaign.Decode(); err != nil {
		return usagef("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := cfg.CheckHost(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// flagSet declares the campaign's flags into cfg (internal/campaign owns
// them, defaults and usage included) and the runner's own into f.
func (c abCmd) flagSet(o *output, cfg *campaign.Config, f *abFlags) *pflag.FlagSet {
	fs := newFlagSet(c.Name(), c.Synopsis(), o)
	f.campaign = campaign.BindFlags(fs, cfg)
	fs.BoolVar(&f.resume, "resume", false, "resume from OUT/journal.jsonl (the default when it exists)")
	fs.BoolVar(&cfg.Fresh, "fresh", false, "ignore an existing journal and start over (the old one is kept aside)")
	fs.DurationVar(&cfg.WaitHost, "wait-host", 0, waitHostUsage)
	fs.BoolVar(&f.progressJSON, "progress-json", false, "progress events on stderr, one JSON object per line")
	fs.BoolVar(&f.removeData, "remove-data", false, "stop the campaign's servers and delete its data directories (not the reports), then exit")
	fs.StringVar(&f.keepReportsAs, "keep-reports-as", "", "with --remove-data: then move OUT, with its reports, to this new directory, so that the same campaign measures again")
	fs.BoolVar(&f.removeReports, "remove-reports", false, "with --remove-data: then remove OUT, reports included (once they are collected elsewhere)")
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
	if f.keepReportsAs != "" && !f.removeData {
		return o.emit(nil, usagef("--keep-reports-as only applies with --remove-data"), nil)
	}
	if f.removeReports && !f.removeData {
		return o.emit(nil, usagef("--remove-reports only applies with --remove-data"), nil)
	}
	if f.removeReports && f.keepReportsAs != "" {
		return o.emit(nil, usagef("--remove-reports and --keep-reports-as contradict each other"), nil)
	}
	if f.removeData {
		removed, err := campaign.RemoveData(ctx, cfg.OutDir, cfg.DataDir)
		kept := ""
		switch {
		case err == nil && f.keepReportsAs != "":
			kept, err = keepReports(cfg.OutDir, f.keepReportsAs)
		case err == nil && f.removeReports:
			if _, serr := os.Stat(cfg.OutDir); serr == nil {
				removed = append(removed, cfg.OutDir)
			}
			err = os.RemoveAll(cfg.OutDir)
		}
		v := map[string]any{"removed": nonNil(removed), "reports_kept_in": kept}
		return o.emit(v, err, func(w io.Writer) {
			for _, d := range removed {
				fmt.Fprintf(w, "removed %s\n", d)
			}
			if kept != "" {
				fmt.Fprintf(w, "reports kept in %s\n", kept)
			}
		})
	}
	if err := checkWaitHost(cfg.WaitHost); err != nil {
		return o.emit(nil, err, nil)
	}
	if f.resume && cfg.Fresh {
		return o.emit(nil, usagef("--resume and --fresh contradict each other"), nil)
	}
	if err := parseAB(&cfg, &f); err != nil {
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

// keepReports moves the campaign directory out to dest, which must not
// exist; a campaign directory already gone has nothing to keep.
func keepReports(out, dest string) (string, error) {
	if _, err := os.Lstat(out); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if _, err := os.Lstat(dest); err == nil {
		return "", fmt.Errorf("keep reports of %s in %s: %s already exists", out, dest, dest)
	}
	if err := os.Rename(out, dest); err != nil {
		return "", fmt.Errorf("keep reports of %s: %w", out, err)
	}
	return dest, nil
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
var notReproduced = map[string]bool{"json": true, "progress-json": true, "resume": true, "fresh": true, "remove-data": true, "keep-reports-as": true, "remove-reports": true, "wait-host": true}

// waitHostUsage is the usage of --wait-host, which ab and build share.
const waitHostUsage = "give up waiting for the host (another campaign measuring, or a build or data load before a measurement) after this long; 0 waits until cancelled"

func checkWaitHost(d time.Duration) error {
	if d < 0 {
		return usagef("--wait-host %s: want a duration of 0 or more", d)
	}
	return nil
}

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
		case campaign.EventPhase:
			fmt.Fprintf(w, "==> %s\n", e)
		case campaign.EventRunStart:
			bar(e.Seq-1, e.Total)
		case campaign.EventRunSkipped, campaign.EventRunDone:
			fmt.Fprintln(w, e)
			bar(e.Seq, e.Total)
		default:
			fmt.Fprintln(w, e)
		}
	}
}
