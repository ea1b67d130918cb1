// Package tpcc is the TPC-C workload of pgbench-runner, on PostgreSQL over
// github.com/jackc/pgx/v5: it loads a dataset of W warehouses (clause 4.3),
// runs the five transactions in HammerDB's "no wait" mode (the mix of
// clause 5.2.3, no keying or think time) for a fixed time with one
// connection per virtual user, and checks the consistency conditions of
// clause 3.3.2.
//
// As HammerDB does on PostgreSQL, each transaction is one call of a
// PL/pgSQL function that the load creates (see functionsDDL): the driver
// draws the inputs, the server does the reads and writes, and a virtual
// user costs the client little. NOPM is counted as HammerDB counts it, from
// the database: the growth of sum(d_next_o_id) over the run, which leaves
// out the new orders the specification rolls back. TPM is the driver's
// count of completed transactions of every type, per minute.
package tpcc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// Version names the dataset's layout and the transactions' code: a dataset
// records the version that loaded it, and a run refuses another one. Bump
// it on any change to the schema, the data the load generates or the
// functions.
const Version = "pgbench-runner-tpcc/1"

// Transaction types, in the order of Mix.
const (
	NewOrder    = "new_order"
	Payment     = "payment"
	OrderStatus = "order_status"
	Delivery    = "delivery"
	StockLevel  = "stock_level"
)

// Types are the transaction types; Mix their share of a run in percent:
// the specification's minimums for all but new-order, which takes the
// rest (clause 5.2.3), as HammerDB runs them.
var (
	Types = []string{NewOrder, Payment, OrderStatus, Delivery, StockLevel}
	Mix   = []int{45, 43, 4, 4, 4}
)

// Dataset sizes of clause 1.2 and 4.3.3.1.
const (
	itemCount            = 100000
	districtsPerWH       = 10
	customersPerDistrict = 3000
	ordersPerDistrict    = 3000
	// Orders numbered from firstUndelivered on are new (undelivered) at
	// load time: the last 900 of each district.
	firstUndelivered = 2101
)

// Conn says where the server is.
type Conn struct {
	// Host is the server's Unix socket directory (or a host name).
	Host string
	// Port is the server's port, which also names its socket; 0 means 5432.
	Port int
	// User and DB default to postgres.
	User string
	DB   string
}

func (c Conn) config() (*pgx.ConnConfig, error) {
	if c.Host == "" {
		return nil, errors.New("no host: give the server's socket directory")
	}
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Database = c.Host, 5432, "postgres", "postgres"
	if c.Port != 0 {
		cfg.Port = uint16(c.Port)
	}
	if c.User != "" {
		cfg.User = c.User
	}
	if c.DB != "" {
		cfg.Database = c.DB
	}
	// A password only from PGPASSWORD, as pgbench takes it: a campaign
	// with a client host gives it there, never in a flag.
	cfg.Password = os.Getenv("PGPASSWORD")
	cfg.Fallbacks = nil
	cfg.RuntimeParams = map[string]string{"application_name": "pgbench-runner-tpcc"}
	cfg.ConnectTimeout = 30 * time.Second
	return cfg, nil
}

func (c Conn) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.Host, err)
	}
	return conn, nil
}

// Meta is what the tpcc_meta row of a dataset records.
type Meta struct {
	Version    string    `json:"version"`
	Warehouses int       `json:"warehouses"`
	Load       Constants `json:"constants"`
	LoadedAt   time.Time `json:"loaded_at"`
}

// ErrNoDataset says the database holds no TPC-C dataset.
var ErrNoDataset = errors.New("no TPC-C dataset in the database (load one first)")

// readMeta reads the dataset's tpcc_meta row.
func readMeta(ctx context.Context, conn *pgx.Conn) (*Meta, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('public.tpcc_meta') IS NOT NULL").Scan(&exists); err != nil {
		return nil, fmt.Errorf("look for tpcc_meta: %w", err)
	}
	if !exists {
		return nil, ErrNoDataset
	}
	var m Meta
	err := conn.QueryRow(ctx, "SELECT version, warehouses, c_last, c_id, ol_i_id, loaded_at FROM tpcc_meta").
		Scan(&m.Version, &m.Warehouses, &m.Load.Last, &m.Load.CID, &m.Load.Item, &m.LoadedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("tpcc_meta is empty: the load did not finish; load again into an empty database")
	}
	if err != nil {
		return nil, fmt.Errorf("read tpcc_meta: %w", err)
	}
	return &m, nil
}

// MismatchError is a dataset that is not the one asked for: another size,
// or loaded by another version of the workload.
type MismatchError struct {
	Have Meta
	Want Meta
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the database holds a TPC-C dataset of %d warehouses loaded by %s, not %d warehouses of %s: load the dataset asked for into an empty database",
		e.Have.Warehouses, e.Have.Version, e.Want.Warehouses, e.Want.Version)
}

// checkMeta makes sure the dataset is warehouses of this Version.
func checkMeta(m *Meta, warehouses int) error {
	if m.Version != Version || m.Warehouses != warehouses {
		return &MismatchError{Have: *m, Want: Meta{Version: Version, Warehouses: warehouses}}
	}
	return nil
}
