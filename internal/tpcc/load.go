package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// LoadOptions say what to load.
type LoadOptions struct {
	Conn
	Warehouses int
	// Threads is the number of connections that load warehouses in
	// parallel; 0 means one per CPU, at most one per warehouse.
	Threads int
	// Seed makes the data reproducible; 0 takes the clock.
	Seed uint64
	// Progress, when set, hears about each phase.
	Progress func(string)
}

// LoadResult is what a load did and how long each part took.
type LoadResult struct {
	Version    string  `json:"version"`
	Warehouses int     `json:"warehouses"`
	Seconds    float64 `json:"seconds"`
	// CopySeconds is the time to generate and copy the rows, IndexSeconds
	// to build the keys and indexes, VacuumSeconds to vacuum, analyze and
	// checkpoint.
	CopySeconds   float64 `json:"copy_seconds"`
	IndexSeconds  float64 `json:"index_seconds"`
	VacuumSeconds float64 `json:"vacuum_seconds"`
	// Bytes is the size of the database after the load.
	Bytes int64 `json:"bytes"`
	// Check is the consistency check of the fresh dataset.
	Check *CheckResult `json:"check"`
}

// Load creates the tables in an empty database, loads o.Warehouses
// warehouses, builds the keys, indexes and transaction functions, vacuums
// and analyzes, checkpoints, and checks every consistency condition. A
// load that fails part way leaves tables behind: load into a fresh
// database after a failure.
func Load(ctx context.Context, o LoadOptions) (*LoadResult, error) {
	if o.Warehouses < 1 {
		return nil, fmt.Errorf("warehouses must be at least 1, not %d", o.Warehouses)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	threads = min(threads, o.Warehouses)
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	conn, err := o.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := checkEmpty(ctx, conn); err != nil {
		return nil, err
	}
	start := time.Now()
	res := &LoadResult{Version: Version, Warehouses: o.Warehouses}
	consts := newLoadConstants(rand.New(rand.NewPCG(seed, 0)))
	progress("create tables")
	if err := execAll(ctx, conn, tablesDDL, "create tables"); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("load %d warehouses with %d connections", o.Warehouses, threads))
	if err := loadWarehouses(ctx, o, threads, seed, consts); err != nil {
		return nil, err
	}
	res.CopySeconds = time.Since(start).Seconds()
	progress("build keys and indexes")
	t := time.Now()
	if err := execAll(ctx, conn, indexDDL, ""); err != nil {
		return nil, err
	}
	if err := execAll(ctx, conn, functionsDDL, "create the transaction functions"); err != nil {
		return nil, err
	}
	res.IndexSeconds = time.Since(t).Seconds()
	progress("vacuum, analyze and checkpoint")
	t = time.Now()
	if err := execAll(ctx, conn, []string{"VACUUM (FREEZE, ANALYZE)", "CHECKPOINT"}, ""); err != nil {
		return nil, err
	}
	res.VacuumSeconds = time.Since(t).Seconds()
	if err := recordDataset(ctx, conn, o.Warehouses, consts, res); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	progress("check the consistency conditions")
	res.Check, err = check(ctx, conn, true)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// execAll runs each statement of qs in turn. An error names what, or the
// statement when what is "".
func execAll(ctx context.Context, conn *pgx.Conn, qs []string, what string) error {
	for _, q := range qs {
		if _, err := conn.Exec(ctx, q); err != nil {
			if what == "" {
				what = q
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// loadWarehouses generates and copies the items and warehouses 1 to
// o.Warehouses over threads connections of their own; the first error
// stops them all.
func loadWarehouses(ctx context.Context, o LoadOptions, threads int, seed uint64, consts Constants) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	work := make(chan int)
	errs := make([]error, threads+1)
	var wg sync.WaitGroup
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[threads] = loadItems(loadCtx, o.Conn, rand.New(rand.NewPCG(seed, 1)))
		if errs[threads] != nil {
			cancel()
		}
	}()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := o.connect(loadCtx)
			if err != nil {
				errs[t] = err
				cancel()
				return
			}
			defer c.Close(context.WithoutCancel(loadCtx))
			for w := range work {
				r := rand.New(rand.NewPCG(seed, uint64(w)+1<<32))
				if err := loadWarehouse(loadCtx, c, r, w, consts, now); err != nil {
					errs[t] = fmt.Errorf("warehouse %d: %w", w, err)
					cancel()
					return
				}
			}
		}()
	}
	for w := 1; w <= o.Warehouses && loadCtx.Err() == nil; w++ {
		select {
		case work <- w:
		case <-loadCtx.Done():
		}
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return ctx.Err()
}

// recordDataset writes the meta row, last: a dataset without it never
// finished loading. It notes the database's size in res.
func recordDataset(ctx context.Context, conn *pgx.Conn, warehouses int, consts Constants, res *LoadResult) error {
	if _, err := conn.Exec(ctx, "INSERT INTO tpcc_meta (version, warehouses, c_last, c_id, ol_i_id) VALUES ($1, $2, $3, $4, $5)",
		Version, warehouses, consts.Last, consts.CID, consts.Item); err != nil {
		return fmt.Errorf("record the dataset: %w", err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&res.Bytes); err != nil {
		return fmt.Errorf("database size: %w", err)
	}
	return nil
}

// checkEmpty refuses a database that already has any of the tables.
func checkEmpty(ctx context.Context, conn *pgx.Conn) error {
	var have []string
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY($1) ORDER BY 1",
		append([]string{"tpcc_meta"}, Tables...))
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	have, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	if len(have) > 0 {
		return fmt.Errorf("the database already has TPC-C tables (%s): load into an empty database", strings.Join(have, ", "))
	}
	return nil
}

// copyRows copies n rows that row makes into table.
func copyRows(ctx context.Context, c *pgx.Conn, table string, cols []string, n int, row func(i int) []any) error {
	_, err := c.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromSlice(n, func(i int) ([]any, error) { return row(i), nil }))
	if err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}

func loadItems(ctx context.Context, conn Conn, r *rand.Rand) error {
	c, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return copyRows(ctx, c, "item", []string{"i_id", "i_im_id", "i_name", "i_price", "i_data"}, itemCount, func(i int) []any {
		return []any{i + 1, between(r, 1, 10000), astring(r, 14, 24), cents(r, 100, 10000), withOriginal(r)}
	})
}

// address is a street, street, city, state and zip (4.3.3.1).
func address(r *rand.Rand) []any {
	return []any{astring(r, 10, 20), astring(r, 10, 20), astring(r, 10, 20), fromSet(r, letters, 2), zip(r)}
}

// loadWarehouse copies one warehouse and everything under it.
func loadWarehouse(ctx context.Context, c *pgx.Conn, r *rand.Rand, w int, consts Constants, now time.Time) error {
	if err := copyRows(ctx, c, "warehouse", []string{"w_id", "w_name", "w_street_1", "w_street_2", "w_city", "w_state", "w_zip", "w_tax", "w_ytd"}, 1,
		func(int) []any {
			return append(append([]any{w, astring(r, 6, 10)}, address(r)...), fraction(r, 0, 2000), 300000.0)
		}); err != nil {
		return err
	}
	if err := copyRows(ctx, c, "district", []string{"d_id", "d_w_id", "d_name", "d_street_1", "d_street_2", "d_city", "d_state", "d_zip", "d_tax", "d_ytd", "d_next_o_id"}, districtsPerWH,
		func(i int) []any {
			return append(append([]any{i + 1, w, astring(r, 6, 10)}, address(r)...), fraction(r, 0, 2000), 30000.0, ordersPerDistrict+1)
		}); err != nil {
		return err
	}
	stockCols := []string{"s_i_id", "s_w_id", "s_quantity", "s_dist_01", "s_dist_02", "s_dist_03", "s_dist_04", "s_dist_05",
		"s_dist_06", "s_dist_07", "s_dist_08", "s_dist_09", "s_dist_10", "s_ytd", "s_order_cnt", "s_remote_cnt", "s_data"}
	if err := copyRows(ctx, c, "stock", stockCols, itemCount, func(i int) []any {
		row := []any{i + 1, w, between(r, 10, 100)}
		for range 10 {
			row = append(row, astring(r, 24, 24))
		}
		return append(row, 0, 0, 0, withOriginal(r))
	}); err != nil {
		return err
	}
	custCols := []string{"c_id", "c_d_id", "c_w_id", "c_first", "c_middle", "c_last", "c_street_1", "c_street_2", "c_city", "c_state", "c_zip",
		"c_phone", "c_since", "c_credit", "c_credit_lim", "c_discount", "c_balance", "c_ytd_payment", "c_payment_cnt", "c_delivery_cnt", "c_data"}
	n := districtsPerWH * customersPerDistrict
	if err := copyRows(ctx, c, "customer", custCols, n, func(i int) []any {
		id, d := i%customersPerDistrict+1, i/customersPerDistrict+1
		last := id - 1
		if id > 1000 {
			last = nuRand(r, nuLast, consts.Last, 0, 999)
		}
		credit := "GC"
		if r.IntN(10) == 0 {
			credit = "BC"
		}
		row := append([]any{id, d, w, astring(r, 8, 16), "OE", lastName(last)}, address(r)...)
		return append(row, nstring(r, 16, 16), now, credit, 50000.0, fraction(r, 0, 5000), -10.0, 10.0, 1, 0, astring(r, 300, 500))
	}); err != nil {
		return err
	}
	if err := copyRows(ctx, c, "history", []string{"h_c_id", "h_c_d_id", "h_c_w_id", "h_d_id", "h_w_id", "h_date", "h_amount", "h_data"}, n,
		func(i int) []any {
			id, d := i%customersPerDistrict+1, i/customersPerDistrict+1
			return []any{id, d, w, d, w, now, 10.0, astring(r, 12, 24)}
		}); err != nil {
		return err
	}
	// Each district's orders: customers in a random permutation, 5 to 15
	// lines, the first 2100 delivered.
	type order struct{ cid, lines, carrier int }
	orders := make([]order, districtsPerWH*ordersPerDistrict)
	for d := range districtsPerWH {
		perm := r.Perm(customersPerDistrict)
		for i := range ordersPerDistrict {
			o := &orders[d*ordersPerDistrict+i]
			o.cid, o.lines = perm[i]+1, between(r, 5, 15)
			if i+1 < firstUndelivered {
				o.carrier = between(r, 1, 10)
			}
		}
	}
	if err := copyRows(ctx, c, "orders", []string{"o_id", "o_d_id", "o_w_id", "o_c_id", "o_entry_d", "o_carrier_id", "o_ol_cnt", "o_all_local"}, len(orders),
		func(i int) []any {
			o := orders[i]
			var carrier any
			if o.carrier > 0 {
				carrier = o.carrier
			}
			return []any{i%ordersPerDistrict + 1, i/ordersPerDistrict + 1, w, o.cid, now, carrier, o.lines, 1}
		}); err != nil {
		return err
	}
	type line struct{ oid, d, number int }
	var lines []line
	for i, o := range orders {
		for k := range o.lines {
			lines = append(lines, line{i%ordersPerDistrict + 1, i/ordersPerDistrict + 1, k + 1})
		}
	}
	if err := copyRows(ctx, c, "order_line", []string{"ol_o_id", "ol_d_id", "ol_w_id", "ol_number", "ol_i_id", "ol_supply_w_id", "ol_delivery_d", "ol_quantity", "ol_amount", "ol_dist_info"}, len(lines),
		func(i int) []any {
			l := lines[i]
			var delivered any
			amount := 0.0
			if l.oid < firstUndelivered {
				delivered = now
			} else {
				amount = cents(r, 1, 999999)
			}
			return []any{l.oid, l.d, w, l.number, between(r, 1, itemCount), w, delivered, 5, amount, astring(r, 24, 24)}
		}); err != nil {
		return err
	}
	undelivered := ordersPerDistrict - firstUndelivered + 1
	return copyRows(ctx, c, "new_order", []string{"no_o_id", "no_d_id", "no_w_id"}, districtsPerWH*undelivered, func(i int) []any {
		return []any{firstUndelivered + i%undelivered, i/undelivered + 1, w}
	})
}
