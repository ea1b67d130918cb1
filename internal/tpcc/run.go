package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RunOptions say what to drive.
type RunOptions struct {
	Conn
	Warehouses int
	// Clients is the number of virtual users, one connection each.
	Clients  int
	Duration time.Duration
	// Seed makes the inputs reproducible; 0 takes the clock.
	Seed uint64
}

// TypeResult is one transaction type's share of a run.
type TypeResult struct {
	// Count is the completed transactions of the type, Rollbacks among
	// them the new orders rolled back on purpose (2.4.2.3); Errors are the
	// ones that failed (a deadlock, a serialization failure), counted in
	// neither.
	Count     int64 `json:"count"`
	Rollbacks int64 `json:"rollbacks,omitempty"`
	Errors    int64 `json:"errors"`
	// Latencies of the completed transactions, in milliseconds.
	LatencyMS Latency `json:"latency_ms"`
	// FirstError is an example of what went wrong, if anything did.
	FirstError string `json:"first_error,omitempty"`
}

// Latency is in milliseconds, from a histogram of three significant digits.
type Latency struct {
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// RunResult is one timed run.
type RunResult struct {
	Version    string  `json:"version"`
	Warehouses int     `json:"warehouses"`
	Clients    int     `json:"clients"`
	Seconds    float64 `json:"seconds"`
	// NewOrders is the growth of sum(d_next_o_id) over the run: the
	// committed new orders. NOPM is their rate per minute.
	NewOrders int64   `json:"new_orders"`
	NOPM      float64 `json:"nopm"`
	// Transactions is the completed transactions of every type, TPM their
	// rate per minute; Errors the failed ones.
	Transactions int64                 `json:"transactions"`
	Errors       int64                 `json:"errors"`
	TPM          float64               `json:"tpm"`
	Types        map[string]TypeResult `json:"types"`
	// LatencyMS is over the completed transactions of every type.
	LatencyMS Latency `json:"latency_ms"`
	// Series is the completed transactions of every type per whole second
	// of the run.
	Series []float64 `json:"series"`
}

// Latency histograms record microseconds, up to a minute.
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

// client is one virtual user's state and tally.
type client struct {
	id     int
	conn   *pgx.Conn
	r      *rand.Rand
	w      int // home warehouse
	nw     int // warehouses in all
	stockD int // the district of its stock-level transactions (2.8.1.1)
	c      Constants

	hist      [5]*hdrhistogram.Histogram
	rollbacks int64
	errs      [5]int64
	first     [5]string
	series    []float64
}

// Run drives o.Clients virtual users for o.Duration. Every connection is
// open before the clock starts; the run ends when the time is up and every
// transaction in flight has finished.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	if o.Clients < 1 || o.Duration <= 0 {
		return nil, fmt.Errorf("a run needs clients >= 1 and a duration, not %d and %v", o.Clients, o.Duration)
	}
	meter, err := o.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer meter.Close(context.WithoutCancel(ctx))
	m, err := readMeta(ctx, meter)
	if err != nil {
		return nil, err
	}
	if err := checkMeta(m, o.Warehouses); err != nil {
		return nil, err
	}
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	clients, err := connectClients(ctx, o, seed, runConstants(rand.New(rand.NewPCG(seed, 0)), m.Load))
	defer closeClients(ctx, clients)
	if err != nil {
		return nil, err
	}
	before, err := newOrderSum(ctx, meter)
	if err != nil {
		return nil, err
	}
	secs := drive(ctx, clients, o.Duration)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	after, err := newOrderSum(ctx, meter)
	if err != nil {
		return nil, err
	}
	res := &RunResult{Version: Version, Warehouses: o.Warehouses, Clients: o.Clients, Seconds: secs, NewOrders: after - before, Types: map[string]TypeResult{}}
	res.NOPM = float64(res.NewOrders) / secs * 60
	res.addClients(clients, o.Duration)
	if res.Transactions == 0 {
		return nil, fmt.Errorf("no transaction completed in %.0f s (%d failed): %s", secs, res.Errors, firstError(res))
	}
	if res.Errors > res.Transactions {
		return nil, fmt.Errorf("%d of %d transactions failed: %s", res.Errors, res.Errors+res.Transactions, firstError(res))
	}
	return res, nil
}

// connectClients opens the connections of o.Clients virtual users. Home
// warehouses go in turn, so every warehouse has users when there are
// enough of them; stock-level districts in turn within a warehouse. On an
// error the users already connected are in the slice, for closeClients.
func connectClients(ctx context.Context, o RunOptions, seed uint64, consts Constants) ([]*client, error) {
	clients := make([]*client, 0, o.Clients)
	for i := range o.Clients {
		c := &client{id: i, r: rand.New(rand.NewPCG(seed, uint64(i)+1)), w: i%o.Warehouses + 1, nw: o.Warehouses, stockD: (i/o.Warehouses)%districtsPerWH + 1, c: consts}
		for k := range c.hist {
			c.hist[k] = hdrhistogram.New(histMin, histMax, histDigits)
		}
		conn, err := o.connect(ctx)
		if err != nil {
			return clients, fmt.Errorf("virtual user %d of %d: %w", i+1, o.Clients, err)
		}
		c.conn = conn
		clients = append(clients, c)
	}
	return clients, nil
}

// closeClients closes the users' connections.
func closeClients(ctx context.Context, clients []*client) {
	for _, c := range clients {
		c.conn.Close(context.WithoutCancel(ctx))
	}
}

// drive runs every user's loop from now until d has passed and every
// transaction in flight has finished, and returns the seconds it took.
func drive(ctx context.Context, clients []*client, d time.Duration) float64 {
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctx, start, deadline)
		}()
	}
	wg.Wait()
	return time.Since(start).Seconds()
}

// addClients merges the users' histograms, errors and per-second series
// into res, whose Seconds is set; the series stops at d.
func (res *RunResult) addClients(clients []*client, d time.Duration) {
	all := hdrhistogram.New(histMin, histMax, histDigits)
	for k, name := range Types {
		h := hdrhistogram.New(histMin, histMax, histDigits)
		var tr TypeResult
		for _, c := range clients {
			h.Merge(c.hist[k])
			tr.Errors += c.errs[k]
			if tr.FirstError == "" {
				tr.FirstError = c.first[k]
			}
			if k == 0 {
				tr.Rollbacks += c.rollbacks
			}
		}
		tr.Count = h.TotalCount()
		tr.LatencyMS = latency(h)
		all.Merge(h)
		res.Types[name] = tr
		res.Transactions += tr.Count
		res.Errors += tr.Errors
	}
	res.TPM = float64(res.Transactions) / res.Seconds * 60
	res.LatencyMS = latency(all)
	for _, c := range clients {
		for s, n := range c.series {
			if s >= len(res.Series) {
				res.Series = append(res.Series, make([]float64, s-len(res.Series)+1)...)
			}
			res.Series[s] += n
		}
	}
	// The last second is the part before the deadline plus the drain.
	if n := int(d / time.Second); len(res.Series) > n {
		res.Series = res.Series[:n]
	}
}

// latency summarizes a histogram of microseconds in milliseconds.
func latency(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{Avg: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)),
		P95: ms(h.ValueAtQuantile(95)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

func firstError(res *RunResult) string {
	for _, name := range Types {
		if e := res.Types[name].FirstError; e != "" {
			return name + ": " + e
		}
	}
	return "no error recorded"
}

// loop runs transactions until the deadline.
func (c *client) loop(ctx context.Context, start, deadline time.Time) {
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(deadline) {
			return
		}
		k := pick(c.r)
		err := c.do(ctx, k)
		t1 := time.Now()
		if ctx.Err() != nil {
			return // cut short: not a failure of the transaction
		}
		var pe *pgconn.PgError
		switch {
		case err == nil:
		case k == 0 && errors.As(err, &pe) && pe.Code == rollbackState:
			c.rollbacks++
		default:
			c.errs[k]++
			if c.first[k] == "" {
				c.first[k] = err.Error()
			}
			if c.conn.IsClosed() {
				// The connection is gone (the server stopped): the next
				// call cannot do better.
				return
			}
			continue
		}
		c.hist[k].RecordValue(max(histMin, min(histMax, t1.Sub(t0).Microseconds())))
		s := int(t1.Sub(start) / time.Second)
		for len(c.series) <= s {
			c.series = append(c.series, 0)
		}
		c.series[s]++
	}
}

// pick draws a transaction type by Mix.
func pick(r *rand.Rand) int {
	n := r.IntN(100)
	for k, p := range Mix {
		if n < p {
			return k
		}
		n -= p
	}
	return 0
}

// do runs one transaction of type k with inputs drawn as clause 2 says.
func (c *client) do(ctx context.Context, k int) error {
	r := c.r
	var q string
	var args []any
	switch Types[k] {
	case NewOrder: // 2.4.1
		d, cid, n := between(r, 1, districtsPerWH), nuRand(r, nuCID, c.c.CID, 1, customersPerDistrict), between(r, 5, 15)
		rollback := between(r, 1, 100) == 1
		type line struct{ item, supply, qty int }
		lines := make([]line, 0, n)
		seen := map[int]bool{}
		allLocal := 1
		for i := range n {
			l := line{supply: c.w, qty: between(r, 1, 10)}
			if i == n-1 && rollback {
				l.item = itemCount + 1 // unused: rolls back
			} else {
				for {
					l.item = nuRand(r, nuItem, c.c.Item, 1, itemCount)
					if !seen[l.item] {
						break
					}
				}
				seen[l.item] = true
			}
			if c.numWarehouses() > 1 && between(r, 1, 100) == 1 {
				l.supply = c.otherWarehouse()
				allLocal = 0
			}
			lines = append(lines, l)
		}
		// In item order: concurrent new orders then lock stock rows in
		// the same order, and the unused item stays last.
		slices.SortFunc(lines, func(a, b line) int { return a.item - b.item })
		items, supply, qty := make([]int32, n), make([]int32, n), make([]int32, n)
		for i, l := range lines {
			items[i], supply[i], qty[i] = int32(l.item), int32(l.supply), int32(l.qty)
		}
		q, args = "SELECT tpcc_new_order($1, $2, $3, $4, $5, $6, $7)", []any{c.w, d, cid, allLocal, items, supply, qty}
	case Payment: // 2.5.1
		d := between(r, 1, districtsPerWH)
		cw, cd := c.w, d
		if c.numWarehouses() > 1 && between(r, 1, 100) > 85 {
			cw, cd = c.otherWarehouse(), between(r, 1, districtsPerWH)
		}
		byName, cid, last := c.customer()
		q, args = "SELECT tpcc_payment($1, $2, $3, $4, $5, $6, $7, $8)", []any{c.w, d, cw, cd, cid, last, byName, cents(r, 100, 500000)}
	case OrderStatus: // 2.6.1
		d := between(r, 1, districtsPerWH)
		byName, cid, last := c.customer()
		q, args = "SELECT tpcc_order_status($1, $2, $3, $4, $5)", []any{c.w, d, cid, last, byName}
	case Delivery: // 2.7.1
		q, args = "SELECT tpcc_delivery($1, $2)", []any{c.w, between(r, 1, 10)}
	case StockLevel: // 2.8.1
		q, args = "SELECT tpcc_stock_level($1, $2, $3)", []any{c.w, c.stockD, between(r, 10, 20)}
	}
	_, err := c.conn.Exec(ctx, q, args...)
	return err
}

// customer draws the customer of a payment or an order-status: 60% by
// last name, 40% by number (2.5.1.2, 2.6.1.2).
func (c *client) customer() (byName bool, id int, last string) {
	if between(c.r, 1, 100) <= 60 {
		return true, 0, lastName(nuRand(c.r, nuLast, c.c.Last, 0, 999))
	}
	return false, nuRand(c.r, nuCID, c.c.CID, 1, customersPerDistrict), ""
}

func (c *client) numWarehouses() int { return c.nw }

// otherWarehouse is a warehouse other than the home one, uniformly.
func (c *client) otherWarehouse() int {
	w := between(c.r, 1, c.nw-1)
	if w >= c.w {
		w++
	}
	return w
}

// newOrderSum is sum(d_next_o_id): it grows by one per committed new order.
func newOrderSum(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(sum(d_next_o_id), 0) FROM district").Scan(&n); err != nil {
		return 0, fmt.Errorf("count new orders: %w", err)
	}
	return n, nil
}
