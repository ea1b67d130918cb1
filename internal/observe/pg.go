package observe

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// PSQL runs one SQL statement and returns psql's unaligned, tuples-only
// output (pgctl.Cluster.Psql).
type PSQL func(ctx context.Context, sql string) (string, error)

// PGSnapshot is PostgreSQL's cumulative statistics at one moment.
type PGSnapshot struct {
	values Counters
}

// pgDatabaseColumns are the pg_stat_database columns a run records, summed
// over the databases.
var pgDatabaseColumns = []string{"xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched",
	"tup_inserted", "tup_updated", "tup_deleted", "temp_files", "temp_bytes", "deadlocks"}

// pgQuery is the one statement of a snapshot on PostgreSQL major: rows of
// name|value. The checkpointer's counters moved from pg_stat_bgwriter to
// pg_stat_checkpointer in 17, which also renamed them; pg_stat_io exists
// from 16.
func pgQuery(major int) string {
	var parts []string
	for _, c := range pgDatabaseColumns {
		parts = append(parts, fmt.Sprintf("SELECT 'pg.%s', coalesce(sum(%s), 0)::float8 FROM pg_stat_database", c, c))
	}
	bg := func(name, col, view string) {
		parts = append(parts, fmt.Sprintf("SELECT 'pg.%s', %s::float8 FROM %s", name, col, view))
	}
	if major >= 17 {
		bg("checkpoints_timed", "num_timed", "pg_stat_checkpointer")
		bg("checkpoints_req", "num_requested", "pg_stat_checkpointer")
		bg("buffers_checkpoint", "buffers_written", "pg_stat_checkpointer")
	} else {
		bg("checkpoints_timed", "checkpoints_timed", "pg_stat_bgwriter")
		bg("checkpoints_req", "checkpoints_req", "pg_stat_bgwriter")
		bg("buffers_checkpoint", "buffers_checkpoint", "pg_stat_bgwriter")
		bg("buffers_backend", "buffers_backend", "pg_stat_bgwriter")
	}
	bg("buffers_clean", "buffers_clean", "pg_stat_bgwriter")
	bg("maxwritten_clean", "maxwritten_clean", "pg_stat_bgwriter")
	bg("buffers_alloc", "buffers_alloc", "pg_stat_bgwriter")
	if major >= 16 {
		for _, c := range []string{"reads", "writes", "extends", "hits", "evictions", "fsyncs"} {
			parts = append(parts, fmt.Sprintf("SELECT 'pg.io.%s', coalesce(sum(%s), 0)::float8 FROM pg_stat_io", c, c))
		}
	}
	return strings.Join(parts, " UNION ALL ")
}

// ReadPG takes a snapshot with one query: pg_stat_database summed over the
// databases (pg.xact_commit, pg.blks_read, pg.tup_returned, ...), the
// checkpointer and background writer (pg.checkpoints_timed,
// pg.checkpoints_req, pg.buffers_checkpoint, pg.buffers_clean, ...; and
// pg.checkpoints, their sum) and on 16+ pg_stat_io summed (pg.io.reads,
// pg.io.writes, ...). The statistics are read in a transaction of their
// own, so they are those flushed by the time it starts.
func ReadPG(ctx context.Context, psql PSQL, major int) (*PGSnapshot, error) {
	out, err := psql(ctx, pgQuery(major))
	if err != nil {
		return nil, err
	}
	s := &PGSnapshot{values: Counters{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, v, ok := strings.Cut(line, "|")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("PostgreSQL statistics: %s is %q, not a number", name, v)
		}
		s.values[name] = n
	}
	if _, ok := s.values["pg.xact_commit"]; !ok {
		return nil, fmt.Errorf("PostgreSQL statistics: no pg_stat_database row in %q", out)
	}
	s.values["pg.checkpoints"] = s.values["pg.checkpoints_timed"] + s.values["pg.checkpoints_req"]
	return s, nil
}

// Delta is the counters of b minus those of a.
func (a *PGSnapshot) Delta(b *PGSnapshot) Counters { return delta(a.values, b.values) }
