package resultsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// Filter selects comparisons; zero fields select all.
type Filter struct {
	Baseline, Candidate string
	Clients             int
}

// Entries returns the comparisons that match f as history entries, oldest
// first, as they were written.
func (db *DB) Entries(ctx context.Context, f Filter) ([]report.HistoryEntry, error) {
	rows, err := db.conn.Query(ctx, `SELECT entry FROM pgbench_comparisons
		WHERE ($1 = '' OR baseline = $1) AND ($2 = '' OR candidate = $2) AND ($3 = 0 OR clients = $3)
		ORDER BY recorded_at, campaign, clients, baseline, candidate`, f.Baseline, f.Candidate, f.Clients)
	if err != nil {
		return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
	}
	defer rows.Close()
	out := []report.HistoryEntry{}
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
		}
		var e report.HistoryEntry
		if err := json.Unmarshal(doc, &e); err != nil {
			return nil, fmt.Errorf("read the results database at %s: a stored entry: %w", db.addr, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
	}
	return out, nil
}

// Points returns the comparisons that match f as change detection sees
// them, without decoding the stored entries.
func (db *DB) Points(ctx context.Context, f Filter) ([]report.SeriesPoint, error) {
	rows, err := db.conn.Query(ctx, `SELECT c.host_class, c.mode, c.scale, x.clients, c.duration_seconds, c.protocol,
		x.baseline, x.candidate, x.campaign, x.recorded_at, c.started_at, x.delta_pct
		FROM pgbench_comparisons x JOIN pgbench_campaigns c ON c.id = x.campaign
		WHERE ($1 = '' OR x.baseline = $1) AND ($2 = '' OR x.candidate = $2) AND ($3 = 0 OR x.clients = $3)`,
		f.Baseline, f.Candidate, f.Clients)
	if err != nil {
		return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
	}
	defer rows.Close()
	var out []report.SeriesPoint
	for rows.Next() {
		var p report.SeriesPoint
		var started *time.Time
		k := &p.Key
		if err := rows.Scan(&k.Host, &k.Mode, &k.Scale, &k.Clients, &k.DurationSeconds, &k.Protocol, &k.Baseline, &k.Candidate,
			&p.Campaign, &p.RecordedAt, &started, &p.DeltaPct); err != nil {
			return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
		}
		if started != nil {
			p.StartedAt = *started
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the results database at %s: %w", db.addr, err)
	}
	return out, nil
}
