package tpcc

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// condition is one consistency condition of clause 3.3.2, as one query over
// the whole database that counts what breaks it.
type condition struct {
	id    string
	about string // what it requires, to say what broke
	query string
	// loadOnly conditions hold only until the first delivery (3.3.2.11).
	loadOnly bool
}

// deliveredPerCustomer sums each customer's delivered order lines.
const deliveredPerCustomer = `(SELECT o.o_w_id, o.o_d_id, o.o_c_id, sum(l.ol_amount) s
	FROM orders o JOIN order_line l ON (l.ol_w_id, l.ol_d_id, l.ol_o_id) = (o.o_w_id, o.o_d_id, o.o_id)
	WHERE l.ol_delivery_d IS NOT NULL GROUP BY 1, 2, 3) ol
	ON (ol.o_w_id, ol.o_d_id, ol.o_c_id) = (c.c_w_id, c.c_d_id, c.c_id)`

var conditions = []condition{
	{id: "3.3.2.1", about: "warehouses whose W_YTD is not the sum of their districts' D_YTD",
		query: `SELECT count(*) FROM warehouse w LEFT JOIN (SELECT d_w_id, sum(d_ytd) s FROM district GROUP BY 1) d ON d.d_w_id = w.w_id
			WHERE w.w_ytd IS DISTINCT FROM d.s`},
	{id: "3.3.2.2", about: "districts whose D_NEXT_O_ID - 1 is not max(O_ID) and max(NO_O_ID)",
		query: `SELECT count(*) FROM district d
			LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) m FROM orders GROUP BY 1, 2) o ON (o.o_w_id, o.o_d_id) = (d.d_w_id, d.d_id)
			LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) m FROM new_order GROUP BY 1, 2) n ON (n.no_w_id, n.no_d_id) = (d.d_w_id, d.d_id)
			WHERE d.d_next_o_id - 1 IS DISTINCT FROM o.m OR (n.m IS NOT NULL AND n.m <> o.m)`},
	{id: "3.3.2.3", about: "districts whose new orders are not numbered without gaps",
		query: `SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n FROM new_order GROUP BY no_w_id, no_d_id) x
			WHERE span <> n`},
	{id: "3.3.2.4", about: "districts whose sum(O_OL_CNT) is not their number of order lines",
		query: `SELECT count(*) FROM (SELECT o_w_id, o_d_id, sum(o_ol_cnt) s FROM orders GROUP BY 1, 2) o
			FULL JOIN (SELECT ol_w_id, ol_d_id, count(*) c FROM order_line GROUP BY 1, 2) l ON (o.o_w_id, o.o_d_id) = (l.ol_w_id, l.ol_d_id)
			WHERE o.s IS DISTINCT FROM l.c`},
	{id: "3.3.2.5", about: "orders with a carrier and a new-order row, or with neither",
		query: `SELECT count(*) FROM orders o LEFT JOIN new_order n ON (n.no_w_id, n.no_d_id, n.no_o_id) = (o.o_w_id, o.o_d_id, o.o_id)
			WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)`},
	{id: "3.3.2.6", about: "orders whose O_OL_CNT is not their number of order lines",
		query: `SELECT count(*) FROM orders o
			LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) c FROM order_line GROUP BY 1, 2, 3) l
			ON (l.ol_w_id, l.ol_d_id, l.ol_o_id) = (o.o_w_id, o.o_d_id, o.o_id)
			WHERE o.o_ol_cnt IS DISTINCT FROM l.c`},
	{id: "3.3.2.7", about: "order lines delivered when their order has no carrier, or the other way round",
		query: `SELECT count(*) FROM orders o JOIN order_line l ON (l.ol_w_id, l.ol_d_id, l.ol_o_id) = (o.o_w_id, o.o_d_id, o.o_id)
			WHERE (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)`},
	{id: "3.3.2.8", about: "warehouses whose W_YTD is not the sum of their history's H_AMOUNT",
		query: `SELECT count(*) FROM warehouse w LEFT JOIN (SELECT h_w_id, sum(h_amount) s FROM history GROUP BY 1) h ON h.h_w_id = w.w_id
			WHERE w.w_ytd IS DISTINCT FROM h.s`},
	{id: "3.3.2.9", about: "districts whose D_YTD is not the sum of their history's H_AMOUNT",
		query: `SELECT count(*) FROM district d LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) s FROM history GROUP BY 1, 2) h
			ON (h.h_w_id, h.h_d_id) = (d.d_w_id, d.d_id) WHERE d.d_ytd IS DISTINCT FROM h.s`},
	{id: "3.3.2.10", about: "customers whose C_BALANCE is not their delivered order lines less their payments",
		query: `SELECT count(*) FROM customer c LEFT JOIN ` + deliveredPerCustomer + `
			LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) s FROM history GROUP BY 1, 2, 3) h
			ON (h.h_c_w_id, h.h_c_d_id, h.h_c_id) = (c.c_w_id, c.c_d_id, c.c_id)
			WHERE c.c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)`},
	{id: "3.3.2.11", about: "districts whose orders less new orders are not 2100", loadOnly: true,
		query: `SELECT count(*) FROM (SELECT o_w_id, o_d_id, count(*) c FROM orders GROUP BY 1, 2) o
			LEFT JOIN (SELECT no_w_id, no_d_id, count(*) c FROM new_order GROUP BY 1, 2) n ON (n.no_w_id, n.no_d_id) = (o.o_w_id, o.o_d_id)
			WHERE o.c - coalesce(n.c, 0) <> 2100`},
	{id: "3.3.2.12", about: "customers whose C_BALANCE + C_YTD_PAYMENT is not the sum of their delivered order lines",
		query: `SELECT count(*) FROM customer c LEFT JOIN ` + deliveredPerCustomer + `
			WHERE c.c_balance + c.c_ytd_payment <> coalesce(ol.s, 0)`},
}

// CheckResult is the outcome of the consistency conditions, as the
// campaign's results carry it: the conditions checked (all twelve right
// after a load, all but 3.3.2.11, which holds only until the first
// delivery, later), whether they hold, and which do not and for how many
// rows.
type CheckResult = report.ConsistencyCheck

// CheckOptions say where to check; AfterLoad adds 3.3.2.11.
type CheckOptions struct {
	Conn
	Warehouses int
	AfterLoad  bool
}

// Check verifies the consistency conditions of the dataset of
// o.Warehouses warehouses. A condition that does not hold is a CheckResult
// with Passed false, not an error; an error means the check could not run.
func Check(ctx context.Context, o CheckOptions) (*CheckResult, error) {
	conn, err := o.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := readMeta(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := checkMeta(m, o.Warehouses); err != nil {
		return nil, err
	}
	return check(ctx, conn, o.AfterLoad)
}

func check(ctx context.Context, conn *pgx.Conn, afterLoad bool) (*CheckResult, error) {
	start := time.Now()
	res := &CheckResult{Passed: true}
	// One snapshot for all conditions: they relate tables to each other.
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, c := range conditions {
		if c.loadOnly && !afterLoad {
			continue
		}
		res.Conditions = append(res.Conditions, c.id)
		var bad int64
		if err := tx.QueryRow(ctx, c.query).Scan(&bad); err != nil {
			return nil, fmt.Errorf("check %s: %w", c.id, err)
		}
		if bad > 0 {
			res.Passed = false
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %d %s", c.id, bad, c.about))
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}
