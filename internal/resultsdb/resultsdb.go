// Package resultsdb is the PostgreSQL results database: the comparisons of
// every collected campaign, kept where CI workspaces that come and go can
// all reach them. The schema is versioned and migrated by the binary that
// opens it; writes are idempotent by campaign id, so an import can be
// repeated and two writers can import the same campaign at once.
package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL is the environment variable the database URL is taken from when
// no flag or attribute gives one.
const EnvURL = "PGBENCH_HISTORY_DATABASE_URL"

// DefaultConnectTimeout bounds a connection attempt when the URL sets no
// connect_timeout: an unreachable database is an error in seconds, not a
// hung pipeline.
const DefaultConnectTimeout = 15 * time.Second

// MaxConnectWait bounds all of Open's attempts together: pgx tries each
// address a name resolves to, and with sslmode=prefer each twice, every
// one for the connect timeout.
const MaxConnectWait = 45 * time.Second

// ParseURL checks that s is a PostgreSQL URL (postgres:// or
// postgresql://) that pgx accepts, and returns its connection settings.
// Its errors never contain the password.
func ParseURL(s string) (*pgx.ConnConfig, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("not a PostgreSQL URL: want postgres://USER:PASSWORD@HOST:PORT/DATABASE")
	}
	cfg, err := pgx.ParseConfig(s)
	if err != nil {
		// pgx redacts the password in the string it quotes, but say only
		// what is wrong, not the URL.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, fmt.Errorf("not a valid PostgreSQL URL: %v", redact(pe.Unwrap().Error(), u))
		}
		return nil, errors.New("not a valid PostgreSQL URL")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg, nil
}

// redact removes u's password from s.
func redact(s string, u *url.URL) string {
	if pw, ok := u.User.Password(); ok && pw != "" {
		s = strings.ReplaceAll(s, pw, "xxxxx")
	}
	return s
}

// Address is "host:port" of a connection, for messages.
func Address(cfg *pgx.ConnConfig) string {
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// DB is an open results database whose schema is this binary's.
type DB struct {
	conn *pgx.Conn
	addr string
}

// UnreachableError is a database that could not be connected to.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("results database at %s cannot be reached: %v", e.Addr, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// Open connects to the database at rawURL and migrates its schema to this
// binary's version; a schema newer than that is refused.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	cfg, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	db := &DB{addr: Address(cfg)}
	connectCtx, cancel := context.WithTimeout(ctx, MaxConnectWait)
	db.conn, err = pgx.ConnectConfig(connectCtx, cfg)
	cancel()
	if err != nil {
		return nil, &UnreachableError{Addr: db.addr, Err: connectCause(err, cfg)}
	}
	if err := migrate(ctx, db.conn); err != nil {
		db.conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("results database at %s: %w", db.addr, err)
	}
	return db, nil
}

// connectCause is the reason of a failed connection without pgx's preamble
// (which names the user and database, never the password) and with any
// trace of the password removed all the same.
func connectCause(err error, cfg *pgx.ConnConfig) error {
	msg := err.Error()
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Unwrap() != nil {
		msg = ce.Unwrap().Error()
	}
	if cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
	}
	return errors.New(msg)
}

// Addr is the host:port of the database.
func (db *DB) Addr() string { return db.addr }

// Close closes the connection.
func (db *DB) Close() error { return db.conn.Close(context.Background()) }
