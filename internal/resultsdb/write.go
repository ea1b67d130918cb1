package resultsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// CampaignRuns are the runs of one campaign, from its results.json.
type CampaignRuns struct {
	Campaign string
	Runs     []report.Run
}

// stageColumns are the columns of the staging table a write copies entries
// into before moving them to the tables, skipping what is already there.
var stageColumns = []string{"campaign", "started_at", "finished_at", "host", "host_class", "mode", "scale", "duration_seconds",
	"protocol", "alpha", "clients", "baseline", "candidate", "recorded_at", "baseline_version", "candidate_version",
	"delta_pct", "p_adjusted", "verdict", "entry"}

// Write stores entries and runs in one transaction and returns how many
// comparisons were new. A campaign or comparison already in the database
// is left as it is (the first write wins), so writing the same entries
// twice, or from two writers at once, stores each of them once.
func (db *DB) Write(ctx context.Context, entries []report.HistoryEntry, runs []CampaignRuns) (int64, error) {
	rows := make([][]any, 0, len(entries))
	for _, e := range entries {
		doc, err := json.Marshal(e)
		if err != nil {
			return 0, fmt.Errorf("encode the entry of campaign %s: %w", e.Campaign, err)
		}
		w := e.Workload
		rows = append(rows, []any{e.Campaign, nullTime(e.StartedAt), nullTime(e.FinishedAt), string(mustJSON(e.Host)), e.Host.Class(),
			w.Mode, int32(w.Scale), w.DurationSeconds, w.Protocol, e.Alpha, int32(w.Clients), e.Baseline.Name, e.Candidate.Name,
			e.RecordedAt, e.Baseline.Version, e.Candidate.Version, e.DeltaPct, e.PAdjusted, e.Verdict, string(doc)})
	}
	var added int64
	err := pgx.BeginFunc(ctx, db.conn, func(tx pgx.Tx) error {
		var err error
		added, err = writeEntries(ctx, tx, rows)
		if err != nil {
			return err
		}
		return writeRuns(ctx, tx, runs)
	})
	if err != nil {
		return 0, fmt.Errorf("write to the results database at %s: %w", db.addr, err)
	}
	return added, nil
}

func writeEntries(ctx context.Context, tx pgx.Tx, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	// The documents are staged as text and parsed once, by the insert.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE pgbench_stage (
		campaign text, started_at timestamptz, finished_at timestamptz, host text, host_class text, mode text,
		scale integer, duration_seconds double precision, protocol text, alpha double precision, clients integer,
		baseline text, candidate text, recorded_at timestamptz, baseline_version text, candidate_version text,
		delta_pct double precision, p_adjusted double precision, verdict text, entry text) ON COMMIT DROP`); err != nil {
		return 0, fmt.Errorf("create the staging table: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pgbench_stage"}, stageColumns, pgx.CopyFromRows(rows)); err != nil {
		return 0, fmt.Errorf("copy the entries: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO pgbench_campaigns
		(id, started_at, finished_at, host, host_class, mode, scale, duration_seconds, protocol, alpha)
		SELECT DISTINCT ON (campaign) campaign, started_at, finished_at, host::jsonb, host_class, mode, scale, duration_seconds, protocol, alpha
		FROM pgbench_stage ORDER BY campaign, recorded_at
		ON CONFLICT (id) DO NOTHING`); err != nil {
		return 0, fmt.Errorf("insert the campaigns: %w", err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO pgbench_comparisons
		(campaign, clients, baseline, candidate, recorded_at, baseline_version, candidate_version, delta_pct, p_adjusted, verdict, entry)
		SELECT DISTINCT ON (campaign, clients, baseline, candidate)
			campaign, clients, baseline, candidate, recorded_at, baseline_version, candidate_version, delta_pct, p_adjusted, verdict, entry::jsonb
		FROM pgbench_stage ORDER BY campaign, clients, baseline, candidate, recorded_at
		ON CONFLICT DO NOTHING`)
	if err != nil {
		return 0, fmt.Errorf("insert the comparisons: %w", err)
	}
	return tag.RowsAffected(), nil
}

func writeRuns(ctx context.Context, tx pgx.Tx, runs []CampaignRuns) error {
	var b pgx.Batch
	for _, c := range runs {
		for _, r := range c.Runs {
			var nopm *float64
			if r.NOPM > 0 {
				nopm = &r.NOPM
			}
			b.Queue(`INSERT INTO pgbench_runs (campaign, seq, variant, clients, iteration, started_at, tps, nopm,
				latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_p99_ms, sampling_rate)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
				c.Campaign, r.Seq, r.Variant, r.Clients, r.Iteration, nullTime(r.StartedAt), r.TPS, nopm,
				r.LatencyMS.Avg, r.LatencyMS.P50, r.LatencyMS.P95, r.LatencyMS.P99, r.SamplingRate)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("insert the runs: %w", err)
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a struct of plain fields always encodes
	}
	return b
}
