package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

type bisectCmd struct{}

func init() { register(bisectCmd{}) }

func (bisectCmd) Name() string { return "bisect" }
func (bisectCmd) Synopsis() string {
	return "find the commit between a good and a bad one that changed PostgreSQL's performance: build it, measure it against both, halve the range, resume after a crash"
}

// bisectFlags holds the flags that are not part of the bisect's
// definition, and the decoder of those that are.
type bisectFlags struct {
	bisect        *bisect.Flags
	progressJSON  bool
	resume        bool
	removeData    bool
	removeBuilds  bool
	keepReportsAs string
	removeReports bool
}

// flagSet declares the bisect's flags into cfg (internal/bisect owns them:
// its own, the build's and the campaign's) and the runner's own into f.
func (c bisectCmd) flagSet(o *output, cfg *bisect.Config, f *bisectFlags) *pflag.FlagSet {
	fs := newFlagSet(c.Name(), c.Synopsis(), o)
	f.bisect = bisect.BindFlags(fs, cfg)
	fs.BoolVar(&f.resume, "resume", false, "resume from OUT/"+bisect.JournalFile+" (the default when it exists)")
	fs.BoolVar(&cfg.Fresh, "fresh", false, "ignore an existing journal and start over (the old one is kept aside)")
	fs.DurationVar(&cfg.Campaign.WaitHost, "wait-host", 0, waitHostUsage)
	fs.BoolVar(&f.progressJSON, "progress-json", false, "progress events on stderr, one JSON object per line")
	fs.BoolVar(&f.removeData, "remove-data", false, "stop the bisect's servers and delete its data directories (not the reports), then exit")
	fs.BoolVar(&f.removeBuilds, "remove-builds", false, "with --remove-data: also remove the builds this bisect made (not those it reused) and the source trees it built them in")
	fs.StringVar(&f.keepReportsAs, "keep-reports-as", "", "with --remove-data: then move OUT, with its reports, to this new directory, so that the same bisect runs again")
	fs.BoolVar(&f.removeReports, "remove-reports", false, "with --remove-data: then remove OUT, reports included")
	return fs
}

func (c bisectCmd) Run(ctx context.Context, args []string) error {
	var o output
	var cfg bisect.Config
	var f bisectFlags
	fs := c.flagSet(&o, &cfg, &f)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if err := f.bisect.Decode(); err != nil {
		return o.emit(nil, usagef("%v", err), nil)
	}
	out := cfg.Campaign.OutDir
	if out == "" {
		return o.emit(nil, usagef("--out is required"), nil)
	}
	switch {
	case (f.keepReportsAs != "" || f.removeReports || f.removeBuilds) && !f.removeData:
		return o.emit(nil, usagef("--keep-reports-as, --remove-reports and --remove-builds only apply with --remove-data"), nil)
	case f.removeReports && f.keepReportsAs != "":
		return o.emit(nil, usagef("--remove-reports and --keep-reports-as contradict each other"), nil)
	case f.resume && cfg.Fresh:
		return o.emit(nil, usagef("--resume and --fresh contradict each other"), nil)
	}
	if f.removeData {
		v, err := removeBisect(ctx, out, cfg.Campaign.DataDir, f)
		return o.emit(v, err, func(w io.Writer) {
			for _, d := range v.Removed {
				fmt.Fprintf(w, "removed %s\n", d)
			}
			if v.KeptIn != "" {
				fmt.Fprintf(w, "reports kept in %s\n", v.KeptIn)
			}
		})
	}
	if err := checkWaitHost(cfg.Campaign.WaitHost); err != nil {
		return o.emit(nil, err, nil)
	}
	cmd := reproduce(fs, args)
	cmd[1] = c.Name()
	cfg.Command = cmd
	onEvent := bisectProgress(o.stderr)
	if f.progressJSON {
		onEvent = jsonProgress(o.stderr)
	}
	res, err := bisect.Execute(ctx, &cfg, onEvent)
	var ue *campaign.UnmetError
	var me *pgbuild.MissingToolsError
	switch {
	case err == nil:
	case campaign.IsValidation(err):
		err = usagef("%v", err)
	case (errors.As(err, &ue) || errors.As(err, &me)) && ctx.Err() == nil:
		err = unmet(err)
	}
	return o.emit(res, err, func(w io.Writer) {
		bisect.WriteMarkdown(w, res)
		fmt.Fprintf(w, "\nresults in %s\n", out)
	})
}

// bisectRemoved is the JSON of `pgbench-runner bisect --remove-data`.
type bisectRemoved struct {
	Removed []string `json:"removed"`
	KeptIn  string   `json:"reports_kept_in"`
}

// removeBisect removes the data directories of the bisect in out, the
// builds it made with --remove-builds, then its reports or moves them
// aside. What is already gone is skipped, so it can run twice.
func removeBisect(ctx context.Context, out, dataDir string, f bisectFlags) (bisectRemoved, error) {
	v := bisectRemoved{Removed: []string{}}
	builds, err := bisect.ReadBuilds(out)
	if err != nil {
		return v, err
	}
	removed, err := campaign.RemoveData(ctx, out, dataDir)
	v.Removed = append(v.Removed, removed...)
	if err != nil {
		return v, err
	}
	if f.removeBuilds {
		trees := map[string]bool{}
		for _, b := range builds {
			if b.Cached || b.Error != "" || b.BinDir == "" {
				continue
			}
			r, err := removeBuild(filepath.Dir(b.BinDir), b.BuildKey)
			if err != nil {
				return v, err
			}
			if r.Removed {
				v.Removed = append(v.Removed, r.Prefix)
			}
			if b.Tree != "" {
				trees[b.Tree] = true
			}
		}
		// The source trees it built in, unless a build holds one.
		for _, tree := range slices.Sorted(maps.Keys(trees)) {
			ok, err := pgbuild.RemoveTree(tree)
			if err != nil {
				return v, err
			}
			if ok {
				v.Removed = append(v.Removed, tree)
			}
		}
	}
	switch {
	case f.keepReportsAs != "":
		v.KeptIn, err = keepReports(out, f.keepReportsAs)
	case f.removeReports:
		if _, serr := os.Stat(out); serr == nil {
			v.Removed = append(v.Removed, out)
		}
		err = os.RemoveAll(out)
	}
	return v, err
}

// bisectProgress writes the campaigns' progress as `ab` does, and the
// bisect's steps as phases.
func bisectProgress(w io.Writer) func(campaign.Event) {
	text := textProgress(w)
	return func(e campaign.Event) {
		if e.Event == bisect.EventStepStart || e.Event == bisect.EventStepDone {
			e = campaign.Event{Event: campaign.EventPhase, Message: e.Message}
		}
		text(e)
	}
}
