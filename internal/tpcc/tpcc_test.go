package tpcc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pg15 = "/usr/lib/postgresql/15/bin"

func TestArgsRoundTrip(t *testing.T) {
	want := Options{Conn: Conn{Host: "/var/lib/pgbench/c/data/a", Port: 5433, User: "postgres", DB: "bench"},
		Warehouses: 40, Clients: 64, Duration: 90 * time.Second, Threads: 8, Seed: 1<<63 + 5, AfterLoad: true}
	for _, action := range []string{ActionLoad, ActionRun, ActionCheck} {
		gotAction, got, err := Parse(want.Args(action))
		if err != nil {
			t.Fatalf("Parse(%q): %v", want.Args(action), err)
		}
		if gotAction != action || !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %s: got %s %+v, want %s %+v", action, gotAction, got, action, want)
		}
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--host=/s", "--warehouses=0"}, "--warehouses must be at least 1"},
		{[]string{"load", "--warehouses=2"}, "--host is required"},
		{[]string{"bake", "--host=/s", "--warehouses=1"}, `unknown action "bake"`},
		{[]string{"run", "--host=/s", "--warehouses=1", "--clients=0"}, "clients of at least 1"},
		{[]string{"--host=/s", "--warehouses=1"}, "want one action"},
	} {
		_, _, err := Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestRandomInputs checks the distributions the specification defines:
// NURand stays in range and is not uniform, last names are the syllables
// of 4.3.2.3, and the run's C_LAST constant keeps the distance 2.1.6.1
// asks for.
func TestRandomInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 3001)
	for range 300000 {
		v := nuRand(r, nuCID, 17, 1, 3000)
		if v < 1 || v > 3000 {
			t.Fatalf("NURand(1023, 1, 3000) = %d, out of range", v)
		}
		counts[v]++
	}
	maxCount := 0
	for _, c := range counts {
		maxCount = max(maxCount, c)
	}
	// Uniform would give about 100 each; NURand's favourites get several times that.
	if maxCount < 300 {
		t.Errorf("NURand's most frequent customer drew %d of 300000: want a skewed distribution (uniform gives ~100)", maxCount)
	}
	if got, want := lastName(371), "PRICALLYOUGHT"; got != want {
		t.Errorf("lastName(371) = %q, want %q", got, want)
	}
	if got, want := lastName(0), "BARBARBAR"; got != want {
		t.Errorf("lastName(0) = %q, want %q", got, want)
	}
	for range 1000 {
		load := newLoadConstants(r)
		run := runConstants(r, load)
		if d := int(math.Abs(float64(run.Last - load.Last))); d < 65 || d > 119 || d == 96 || d == 112 {
			t.Fatalf("C_LAST run %d, load %d: difference %d breaks 2.1.6.1", run.Last, load.Last, d)
		}
	}
	mix := make([]int, len(Mix))
	const n = 200000
	for range n {
		mix[pick(r)]++
	}
	for k, p := range Mix {
		if got := float64(mix[k]) / n * 100; math.Abs(got-float64(p)) > 0.5 {
			t.Errorf("%s drawn %.2f%% of the time, want %d%%", Types[k], got, p)
		}
	}
	s := withOriginal(rand.New(rand.NewPCG(3, 3)))
	if len(s) < 26 || len(s) > 50 {
		t.Errorf("withOriginal gave %d characters, want 26 to 50", len(s))
	}
}

// scratch starts a PostgreSQL 15 server for the test and returns where it is.
func scratch(t *testing.T, settings map[string]string) Conn {
	t.Helper()
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", pg15)
	ctx := context.Background()
	c, cleanup, err := pgctl.Scratch(ctx, pg15, settings)
	if err != nil {
		t.Fatalf("scratch cluster: %v", err)
	}
	t.Cleanup(cleanup)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return Conn{Host: c.SocketDir()}
}

// TestLoadRunCheck loads two warehouses into a real server, checks all
// twelve conditions, runs the mix, and checks again: the run's counts
// agree with the database's, every type ran in about its share, and the
// data is still consistent.
func TestLoadRunCheck(t *testing.T) {
	conn := scratch(t, map[string]string{"shared_buffers": "128MB", "fsync": "off", "huge_pages": "off"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	lr, err := Load(ctx, LoadOptions{Conn: conn, Warehouses: 2, Seed: 7})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Logf("load: %.1f s (copy %.1f, indexes %.1f, vacuum %.1f), %d MB, check %.1f s",
		lr.Seconds, lr.CopySeconds, lr.IndexSeconds, lr.VacuumSeconds, lr.Bytes>>20, lr.Check.Seconds)
	if !lr.Check.Passed || len(lr.Check.Conditions) != 12 {
		t.Fatalf("check after load: %+v, want all 12 conditions to hold", lr.Check)
	}
	if _, err := Load(ctx, LoadOptions{Conn: conn, Warehouses: 2}); err == nil || !strings.Contains(err.Error(), "load into an empty database") {
		t.Errorf("a second load = %v, want a refusal naming the tables already there", err)
	}

	rr, err := Run(ctx, RunOptions{Conn: conn, Warehouses: 2, Clients: 4, Duration: 5 * time.Second, Seed: 11})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("run: NOPM %.0f, TPM %.0f, %d transactions, %d errors", rr.NOPM, rr.TPM, rr.Transactions, rr.Errors)
	no := rr.Types[NewOrder]
	// Every new order either commits (and moves d_next_o_id) or is one of
	// the rollbacks on purpose.
	if got, want := rr.NewOrders, no.Count-no.Rollbacks; got != want {
		t.Errorf("d_next_o_id grew by %d, the driver committed %d new orders (%d completed, %d rolled back)", got, want, no.Count, no.Rollbacks)
	}
	if rr.Errors > rr.Transactions/100 {
		t.Errorf("%d errors in %d transactions; first: %s", rr.Errors, rr.Transactions, firstError(rr))
	}
	for k, name := range Types {
		tr := rr.Types[name]
		share := float64(tr.Count) / float64(rr.Transactions) * 100
		if tr.Count == 0 || math.Abs(share-float64(Mix[k])) > float64(Mix[k])/2+2 {
			t.Errorf("%s: %d transactions, %.1f%% of all, want about %d%%", name, tr.Count, share, Mix[k])
		}
		if l := tr.LatencyMS; !(l.P50 > 0 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("%s latencies %+v are not ordered", name, l)
		}
	}
	if len(rr.Series) != 5 {
		t.Errorf("series has %d seconds, want 5: %v", len(rr.Series), rr.Series)
	}

	cr, err := Check(ctx, CheckOptions{Conn: conn, Warehouses: 2})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !cr.Passed || len(cr.Conditions) != 11 {
		t.Errorf("check after the run: %+v, want the 11 conditions that outlive deliveries to hold", cr)
	}
	// 3.3.2.11 no longer holds once deliveries ran: the check must say so.
	cr, err = Check(ctx, CheckOptions{Conn: conn, Warehouses: 2, AfterLoad: true})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if cr.Passed || !strings.Contains(strings.Join(cr.Failures, ";"), "3.3.2.11") {
		t.Errorf("check with 3.3.2.11 after deliveries: %+v, want it to fail on 3.3.2.11", cr)
	}

	var mm *MismatchError
	if _, err := Run(ctx, RunOptions{Conn: conn, Warehouses: 3, Clients: 1, Duration: time.Second}); !errors.As(err, &mm) ||
		!strings.Contains(err.Error(), "2 warehouses loaded by "+Version) || !strings.Contains(err.Error(), "not 3 warehouses") {
		t.Errorf("a run of 3 warehouses on a dataset of 2 = %v, want a mismatch naming both", err)
	}
}

// TestCheckFindsBrokenData breaks one condition on purpose: the check must
// name it.
func TestCheckFindsBrokenData(t *testing.T) {
	conn := scratch(t, map[string]string{"fsync": "off", "huge_pages": "off"})
	ctx := context.Background()
	if _, err := Load(ctx, LoadOptions{Conn: conn, Warehouses: 1, Seed: 3}); err != nil {
		t.Fatalf("Load: %v", err)
	}
	c, err := conn.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 4"); err != nil {
		t.Fatal(err)
	}
	cr, err := Check(ctx, CheckOptions{Conn: conn, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cr.Failures, "; ")
	if cr.Passed || !strings.Contains(got, "3.3.2.1: 1 warehouses") || !strings.Contains(got, "3.3.2.9: 1 districts") {
		t.Errorf("check of a district with D_YTD off by one: passed %v, failures %q; want 3.3.2.1 and 3.3.2.9", cr.Passed, got)
	}
}
