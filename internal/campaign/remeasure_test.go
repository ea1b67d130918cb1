package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailedRunIsMeasuredAgain makes the real pgbench of one measured run
// fail (a wrapper in front of it exits 1 once): the campaign journals the
// failure, measures that pair again back to back, finishes with every run,
// and counts and explains the replacement.
func TestFailedRunIsMeasuredAgain(t *testing.T) {
	bin := needPostgres(t)
	out := scratch(t)
	marks := filepath.Join(filepath.Dir(out), "marks")
	if err := os.Mkdir(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(marks, 0o777)
	// The second measured run (-T 2; warm-ups run -T 1) fails once.
	wrapper := filepath.Join(filepath.Dir(out), "flaky")
	script := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" -T 2 "*)
	n=$(cat %[1]s/measured 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s/measured
	if [ "$n" -eq 2 ]; then echo "pgbench: simulated failure" >&2; exit 1; fi;;
esac
exec "$@"
`, marks)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: 2 * time.Second, Iterations: 3, Warmup: time.Second,
		Alpha: 0.05, OutDir: out, Clone: true, ClientPrefix: []string{wrapper},
	}
	var rec recorder
	res, err := Execute(context.Background(), cfg, rec.on)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	checkOrder(t, cfg, res.Runs)
	if len(res.Replaced) != 1 {
		t.Fatalf("replaced = %+v, want one pair", res.Replaced)
	}
	rep := res.Replaced[0]
	if rep.Clients != 2 || rep.Iteration != 1 || !strings.Contains(rep.Reason, "run 2 (b) failed") || !strings.Contains(rep.Reason, "simulated failure") {
		t.Errorf("replacement = %+v, want iteration 1's pair, naming run 2 and pgbench's error", rep)
	}
	// Run 1 (a) was measured again after run 2 failed: it now starts
	// after the failure, right before its partner.
	if !res.Runs[0].StartedAt.After(rep.At) || res.Runs[1].StartedAt.Sub(res.Runs[0].StartedAt) > time.Minute {
		t.Errorf("pair 1 ran at %s and %s, the failure at %s: want both after it, back to back", res.Runs[0].StartedAt, res.Runs[1].StartedAt, rep.At)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "1 pairs of runs were measured again") {
		t.Errorf("warnings = %q, want the replacement counted", res.Warnings)
	}
	// The journal keeps the failure, and a recompute reports it too.
	again, err := Recompute(out, cfg.Alpha, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Replaced) != 1 || len(again.Runs) != 6 {
		t.Errorf("recomputed: %d replaced, %d runs; want 1 and 6", len(again.Replaced), len(again.Runs))
	}
}

// TestResumedPairFarApartIsMeasuredAgain resumes a campaign whose last pair
// is half in the journal, its first run from hours ago: that run and its
// partner are measured again, back to back, and the results say why.
func TestResumedPairFarApartIsMeasuredAgain(t *testing.T) {
	bin := needPostgres(t)
	out := scratch(t)
	cfg := &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{2}, Duration: 2 * time.Second, Iterations: 3, Warmup: time.Second,
		Alpha: 0.05, OutDir: out, Clone: true,
	}
	if _, err := Execute(context.Background(), cfg, nil); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	// As if the campaign had stopped after run 5 (a, iteration 3), hours
	// ago: drop run 6 and move run 5 back in time.
	path := filepath.Join(out, JournalFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		if l.Run != nil && l.Run.Seq == 6 {
			continue
		}
		if l.Run != nil && l.Run.Seq == 5 {
			l.Run.StartedAt = l.Run.StartedAt.Add(-3 * time.Hour)
			if line, err = json.Marshal(l); err != nil {
				t.Fatal(err)
			}
		}
		kept = append(kept, line)
	}
	if err := os.WriteFile(path, append(bytes.Join(kept, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	checkOrder(t, cfg, res.Runs)
	if len(res.Replaced) != 1 || res.Replaced[0].Iteration != 3 || !strings.Contains(res.Replaced[0].Reason, "resumed") {
		t.Fatalf("replaced = %+v, want iteration 3's pair, replaced for a resume", res.Replaced)
	}
	for _, r := range res.Runs[4:] {
		if r.StartedAt.Before(resumedAt) {
			t.Errorf("run %d started %s, before the resume at %s: want it measured again", r.Seq, r.StartedAt, resumedAt)
		}
	}
	for _, r := range res.Runs[:4] {
		if r.StartedAt.After(resumedAt) {
			t.Errorf("run %d was measured again; only the last pair should be", r.Seq)
		}
	}
	if res.Replaced[0].Failed != nil {
		t.Errorf("a resumed pair has no failed run: %+v", res.Replaced[0].Failed)
	}
}
