package campaign

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// measuredSpan is the time from the start of the first measured run in a
// journal to the end of its last.
func measuredSpan(t *testing.T, out string) (first, last time.Time, runs int) {
	t.Helper()
	h, j, err := readJournal(out)
	if err != nil || h == nil {
		t.Fatalf("readJournal(%s) = %v, %v", out, h, err)
	}
	for _, r := range j.Runs {
		end := runEnd(r)
		if first.IsZero() || r.StartedAt.Before(first) {
			first = r.StartedAt
		}
		if end.After(last) {
			last = end
		}
	}
	return first, last, len(j.Runs)
}

func runEnd(r report.Run) time.Time {
	return r.StartedAt.Add(time.Duration(r.Seconds * float64(time.Second)))
}

// TestTwoCampaignsTakeTurns starts two real campaigns on this host at the
// same moment. Both must finish, and their journals must show that one
// measured only before or after the other: neither's runs fall inside the
// other's measured phase. One of them waited, and said so.
func TestTwoCampaignsTakeTurns(t *testing.T) {
	bin := needPostgres(t)
	t.Setenv(hostlock.DirEnv, filepath.Join(t.TempDir(), "lock"))
	outs := []string{scratch(t), scratch(t)}
	recs := make([]recorder, len(outs))
	errs := make([]error, len(outs))
	var wg sync.WaitGroup
	for i, out := range outs {
		cfg := &Config{
			Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
			Settings: map[string]string{"shared_buffers": "32MB"},
			Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: time.Second, Iterations: 2,
			OutDir: out, Clone: i == 0,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Execute(context.Background(), cfg, recs[i].on)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("campaign %d: %v", i, err)
		}
	}
	f0, l0, n0 := measuredSpan(t, outs[0])
	f1, l1, n1 := measuredSpan(t, outs[1])
	t.Logf("campaign 0 measured %s-%s (%d runs), campaign 1 %s-%s (%d runs)",
		f0.Format("15:04:05.000"), l0.Format("15:04:05.000"), n0, f1.Format("15:04:05.000"), l1.Format("15:04:05.000"), n1)
	if n0 != 4 || n1 != 4 {
		t.Fatalf("journals hold %d and %d runs, want 4 each", n0, n1)
	}
	if f0.Before(l1) && f1.Before(l0) {
		t.Errorf("measured phases overlap: %s-%s and %s-%s", f0, l0, f1, l1)
	}
	waits := 0
	for i := range recs {
		for _, e := range recs[i].events {
			if e.Event == EventWaiting {
				waits++
				t.Logf("campaign %d: %s", i, e)
			}
		}
	}
	if waits == 0 {
		t.Errorf("no campaign reported a %s event; one of them had to wait for the other", EventWaiting)
	}
}
