package resultsdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions: migrations[i] takes the schema
// from version i to i+1. Append, never edit: a database records the
// version it is at.
var migrations = []string{
	// 1: campaigns, their comparisons (one row per cell and pair of
	// variants, the history entry as it was written) and their runs.
	`CREATE TABLE pgbench_campaigns (
		id text PRIMARY KEY,
		started_at timestamptz,
		finished_at timestamptz,
		host jsonb NOT NULL,
		host_class text NOT NULL,
		mode text NOT NULL,
		scale integer NOT NULL,
		duration_seconds double precision NOT NULL,
		protocol text NOT NULL,
		alpha double precision,
		imported_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE pgbench_comparisons (
		campaign text NOT NULL REFERENCES pgbench_campaigns (id) ON DELETE CASCADE,
		clients integer NOT NULL,
		baseline text NOT NULL,
		candidate text NOT NULL,
		recorded_at timestamptz NOT NULL,
		baseline_version text NOT NULL,
		candidate_version text NOT NULL,
		delta_pct double precision NOT NULL,
		p_adjusted double precision,
		verdict text NOT NULL,
		entry jsonb NOT NULL,
		PRIMARY KEY (campaign, clients, baseline, candidate)
	);
	CREATE INDEX pgbench_comparisons_recorded ON pgbench_comparisons (recorded_at);
	CREATE TABLE pgbench_runs (
		campaign text NOT NULL REFERENCES pgbench_campaigns (id) ON DELETE CASCADE,
		seq integer NOT NULL,
		variant text NOT NULL,
		clients integer NOT NULL,
		iteration integer NOT NULL,
		started_at timestamptz,
		tps double precision NOT NULL,
		nopm double precision,
		latency_avg_ms double precision,
		latency_p50_ms double precision,
		latency_p95_ms double precision,
		latency_p99_ms double precision,
		sampling_rate double precision,
		PRIMARY KEY (campaign, seq)
	);`,
}

// SchemaVersion is the newest schema this binary knows.
var SchemaVersion = len(migrations)

// migrateLock is the advisory lock key that serializes migrations of one
// database ("pgbench" in ASCII).
const migrateLock = 0x7067_6265_6e63_68

// NewerSchemaError is a database migrated by a newer binary.
type NewerSchemaError struct{ Database, Binary int }

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("the results database has schema version %d, newer than version %d that this binary knows: upgrade pgbench-runner and the provider", e.Database, e.Binary)
}

// migrate brings the schema to SchemaVersion in one transaction, under an
// advisory lock so two binaries opening a new database do not both create it.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS pgbench_schema_version (
			version integer NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create the schema version table: %w", err)
		}
		var version *int32
		if err := tx.QueryRow(ctx, `SELECT max(version) FROM pgbench_schema_version`).Scan(&version); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		v := 0
		if version != nil {
			v = int(*version)
		}
		if v > SchemaVersion {
			return &NewerSchemaError{Database: v, Binary: SchemaVersion}
		}
		for ; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO pgbench_schema_version (version) VALUES ($1)`, v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}
