package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
)

type reportCmd struct{}

func init() { register(reportCmd{}) }

func (reportCmd) Name() string { return "report" }
func (reportCmd) Synopsis() string {
	return "take a finished campaign's report away: `report OUT --archive FILE` packs it in one file, " +
		"`report OUT --manifest` packs the raw logs and lists the files with their sha256"
}

// archiveResult is what `report --archive` prints.
type archiveResult struct {
	Archive string `json:"archive"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

func (c reportCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	archive := fs.String("archive", "", "write the whole report (journal, results, summary, chart, sysinfo, benchstat files, raw logs) to this .tar.gz")
	manifest := fs.Bool("manifest", false, "pack the raw logs into OUT/"+campaign.LogsArchive+" and list the report's files, results.json last")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return o.emit(nil, usagef("want one campaign directory: report OUT --archive FILE, or report OUT --manifest"), nil)
	case (*archive == "") == !*manifest:
		return o.emit(nil, usagef("give one of --archive FILE and --manifest"), nil)
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return o.emit(nil, usagef("%s is not a campaign directory", dir), nil)
	}
	// Packing and hashing a campaign's logs is work a measurement must not
	// have beside it: it waits for one, as a build does.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return o.emit(nil, usagef("%s: %v", dir, err), nil)
	}
	dest := ""
	if *archive != "" {
		if dest, err = filepath.Abs(*archive); err != nil {
			return o.emit(nil, usagef("--archive %q: %v", *archive, err), nil)
		}
		if rel, err := filepath.Rel(abs, dest); err == nil && filepath.IsLocal(rel) {
			return o.emit(nil, usagef("--archive %s is inside the campaign directory it packs", *archive), nil)
		}
	}
	host, err := hostlock.Acquire(ctx, hostlock.Holder{Who: "report " + abs, Doing: "packing", Mode: hostlock.Shared},
		hostlock.Waiting{Report: func(w hostlock.Wait) { fmt.Fprintln(o.stderr, w) }})
	if err != nil {
		return o.emit(nil, err, nil)
	}
	defer host.Release()
	if *manifest {
		m, err := campaign.CollectManifest(dir)
		return o.emit(m, err, func(w io.Writer) {
			for _, f := range m.Files {
				fmt.Fprintf(w, "%s  %10d  %s\n", f.SHA256, f.Bytes, f.Name)
			}
		})
	}
	err = atomicfile.Write(dest, 0o644, func(w io.Writer) error { return campaign.WriteArchive(w, dir) })
	if err != nil {
		return o.emit(nil, err, nil)
	}
	res := archiveResult{Archive: dest}
	st, err := os.Stat(dest)
	if err == nil {
		res.Bytes = st.Size()
		res.SHA256, err = digest.FileSHA256(dest)
	}
	return o.emit(res, err, func(w io.Writer) {
		fmt.Fprintf(w, "report of %s in %s (%d bytes, sha256 %s)\n", dir, res.Archive, res.Bytes, res.SHA256)
	})
}
