package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
)

// A collected campaign's comparisons go into the local history (always)
// and, when the provider's history block names a results database, into
// that database. The campaign is marked pending beside the history first
// and unmarked once the database has it, so a database that cannot be
// reached costs a warning, never the entry: the next refresh of a
// pgbench_ab_benchmark beside that history, or `pgbench-runner history
// import`, pushes it.

// historyBeside is the history file beside the collected campaign in local.
func historyBeside(local string) string { return filepath.Join(filepath.Dir(local), historyFile) }

// recordHistory appends a collected campaign's comparisons to the history
// beside local and pushes them to the results database at dbURL, if any.
// logf reports each step to the campaign's progress.log.
func recordHistory(ctx context.Context, dbURL, local, campaignID string, entries []report.HistoryEntry, logf func(string)) diag.Diagnostics {
	var d diag.Diagnostics
	hist := historyBeside(local)
	if err := report.AppendHistory(hist, entries); err != nil {
		d.AddWarning("Campaign Not Added To History", fmt.Sprintf("The report is collected in %s, but appending it to %s failed: %v.", local, hist, err))
		return d
	}
	logf("added to the history in " + hist)
	if dbURL == "" || len(entries) == 0 {
		return d
	}
	if err := report.MarkPending(hist, []string{campaignID}); err != nil {
		d.AddWarning("Campaign Not Marked Pending", fmt.Sprintf("The campaign is in %s, but marking it for the results database failed: %v. "+
			"Import it with `pgbench-runner history import %s`.", hist, err, hist))
		return d
	}
	d.Append(pushPendingHistory(ctx, dbURL, hist, logf)...)
	return d
}

// pushPendingHistory writes the campaigns pending beside hist to the
// results database; one it cannot reach is a warning naming its host and
// port, and the campaigns stay pending.
func pushPendingHistory(ctx context.Context, dbURL, hist string, logf func(string)) diag.Diagnostics {
	var d diag.Diagnostics
	if dbURL == "" {
		return d
	}
	if ids, err := report.Pending(hist); err != nil || len(ids) == 0 {
		return d
	}
	db, err := resultsdb.Open(ctx, dbURL)
	if err == nil {
		var pushed []string
		pushed, err = db.PushPending(ctx, hist)
		db.Close()
		if err == nil {
			logf(fmt.Sprintf("wrote %s to the results database at %s", strings.Join(pushed, ", "), db.Addr()))
			return d
		}
	}
	d.AddWarning("Results Database Not Written", fmt.Sprintf("%v. The campaigns stay in %s, marked pending in %s; "+
		"the next apply pushes them, or run `pgbench-runner history import %s` (with %s set).",
		err, hist, hist+report.PendingSuffix, hist, resultsdb.EnvURL))
	return d
}

// historyDatabaseURL is the history block's database_url, else the
// environment's.
func historyDatabaseURL(cfg *historyModel) string {
	if cfg != nil && !cfg.DatabaseURL.IsNull() && !cfg.DatabaseURL.IsUnknown() {
		return cfg.DatabaseURL.ValueString()
	}
	return os.Getenv(resultsdb.EnvURL)
}
