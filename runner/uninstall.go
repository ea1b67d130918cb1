package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tune"
)

type uninstallCmd struct{}

func init() { register(uninstallCmd{}) }

func (uninstallCmd) Name() string { return "uninstall" }
func (uninstallCmd) Synopsis() string {
	return "undo what pgbench_host did in an install directory: revert tuning, remove campaign data and the runner"
}

func (c uninstallCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	dir := fs.String("dir", "", "install directory (default: the directory of this pgbench-runner)")
	removeDir := fs.Bool("remove-dir", false, "also remove the install directory when nothing else is left in it")
	keepCampaigns := fs.Bool("keep-campaigns", false, "leave campaign data alone (when undoing an install that just failed)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if *dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return o.emit(nil, fmt.Errorf("find the install directory: %w; pass --dir", err), nil)
		}
		*dir = filepath.Dir(exe)
	}
	if !filepath.IsAbs(*dir) {
		return o.emit(nil, usagef("--dir %q is not an absolute path", *dir), nil)
	}
	res, err := uninstall(ctx, filepath.Clean(*dir), *removeDir, *keepCampaigns)
	return o.emit(res, err, func(w io.Writer) {
		fmt.Fprintf(w, "uninstalled from %s\n", res.Dir)
		if len(res.TuningReverted) > 0 {
			fmt.Fprintf(w, "reverted tuning: %s\n", strings.Join(res.TuningReverted, ", "))
		}
		for _, cc := range res.Campaigns {
			fmt.Fprintf(w, "removed data of campaign %s (reports kept)\n", cc.Dir)
		}
		for _, f := range res.Removed {
			fmt.Fprintf(w, "removed %s\n", f)
		}
		if res.DirKept != "" {
			fmt.Fprintf(w, "kept %s: %s\n", res.Dir, res.DirKept)
		}
		for _, wn := range res.Warnings {
			fmt.Fprintf(w, "warning: %s\n", wn)
		}
	})
}

// uninstall works in the order that keeps a retry possible: the runner is
// removed last, so a failed tuning revert or an interrupted clean-up can be
// run again. What is already gone is skipped, so running it twice is fine.
func uninstall(ctx context.Context, dir string, removeDir, keepCampaigns bool) (*runnerclient.Uninstalled, error) {
	res := &runnerclient.Uninstalled{Dir: dir, TuningReverted: []string{}, Campaigns: []runnerclient.CampaignCleanup{},
		Removed: []string{}, Warnings: []string{}}

	var t tune.Tuner
	state := runnerclient.TuneStatePath(dir)
	tr, err := t.Revert(state)
	if err != nil {
		return res, fmt.Errorf("revert tuning (previous values stay in %s): %w", state, err)
	}
	for _, ch := range tr.Changes {
		res.TuningReverted = append(res.TuningReverted, ch.Knob)
	}

	// Campaigns that never finished were never in any Terraform state, so
	// nothing else removes their data directories (tens of GB at scale
	// 3000) or stops a server a killed runner left behind.
	root := campaign.Root(dir)
	var ents []os.DirEntry
	if !keepCampaigns {
		ents, err = os.ReadDir(root)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("read %s: %v; campaign data there was not removed", root, err))
	}
	for _, e := range ents {
		out := filepath.Join(root, e.Name())
		_, cerr := os.Stat(filepath.Join(out, campaign.JournalFile))
		_, berr := os.Stat(filepath.Join(out, bisect.JournalFile))
		if !e.IsDir() || (cerr != nil && berr != nil) {
			continue
		}
		removed, err := campaign.RemoveData(ctx, out, "")
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("remove the data directories of the campaign in %s: %v; remove them by hand", out, err))
			continue
		}
		res.Campaigns = append(res.Campaigns, runnerclient.CampaignCleanup{Dir: out, Removed: orEmpty(removed)})
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("uninstall from %s: %w", dir, err)
	}

	for _, f := range []string{state, runnerclient.BinaryPath(dir)} {
		err := os.Remove(f)
		switch {
		case err == nil:
			res.Removed = append(res.Removed, f)
		case !errors.Is(err, os.ErrNotExist):
			res.Warnings = append(res.Warnings, fmt.Sprintf("remove %s: %v", f, err))
		}
	}
	if removeDir {
		// The campaigns directory, once its campaigns are destroyed (their
		// reports collected elsewhere), is empty: it goes first, and so
		// does the bisects' build directory once their builds are gone.
		// One that still holds reports or kept builds stays, and so does
		// the install directory.
		for _, d := range []string{root, runnerclient.BisectBuildRoot(dir)} {
			if err := os.Remove(d); err == nil {
				res.Removed = append(res.Removed, d)
			}
		}
		err := os.Remove(dir)
		switch {
		case err == nil:
			res.DirRemoved = true
		case errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST):
			res.DirKept = "it is not empty"
		case !errors.Is(err, os.ErrNotExist):
			res.Warnings = append(res.Warnings, fmt.Sprintf("remove %s: %v", dir, err))
		}
	}
	return res, nil
}

func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
