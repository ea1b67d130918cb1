package resultsdbtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// Night0 is the first night of the synthetic series.
var Night0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

// Nightly returns the history entries of a nightly series as the provider
// writes them: nights campaigns named prefix-NNN, one a night, each
// comparing stock with patched at the given client count on one metal
// host, with a delta of noise (sd 1%) that moves by stepPct from night
// stepAt on (no step when stepAt < 0).
func Nightly(prefix string, nights, clients, stepAt int, stepPct float64, seed uint64) []report.HistoryEntry {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]report.HistoryEntry, nights)
	for i := range out {
		start := Night0.AddDate(0, 0, i)
		delta := rng.NormFloat64()
		if stepAt >= 0 && i >= stepAt {
			delta += stepPct
		}
		lo, hi := delta-1, delta+1
		out[i] = report.HistoryEntry{
			HistoryVersion: report.HistoryVersion, RecordedAt: start.Add(2 * time.Hour), Campaign: fmt.Sprintf("%s-%03d", prefix, i),
			StartedAt: start, FinishedAt: start.Add(90 * time.Minute),
			Host: report.HistoryHost{InstanceType: "c6i.metal", CPUModel: "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", CPUs: 128,
				Cores: 64, Sockets: 2, NUMANodes: 2, Kernel: "6.1.0-27-amd64", THP: "never", NUMABalancing: "0", Governor: "performance"},
			Workload: report.HistoryWorkload{Mode: "select-only", Scale: 100, DurationSeconds: 60, Clients: clients, Protocol: "prepared"},
			Baseline: report.HistoryVariant{Name: "stock", Version: "postgres (PostgreSQL) 18.1", BinDir: "/opt/pg/stock/bin",
				HugePages: "on", MedianTPS: 100000},
			Candidate: report.HistoryVariant{Name: "patched", Version: "postgres (PostgreSQL) 19devel", BinDir: "/opt/pg/master/bin",
				HugePages: "on", MedianTPS: 100000 * (1 + delta/100)},
			Method: "paired", N: 5, DeltaPct: delta, CILowPct: &lo, CIHighPct: &hi, CILevel: 0.95,
			PValue: 0.2, PAdjusted: 0.2, Alpha: 0.05, Verdict: "no-difference",
		}
	}
	return out
}

// WriteHistory writes entries as a history file in a new temporary
// directory and returns its path.
func WriteHistory(t testing.TB, entries []report.HistoryEntry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), report.HistoryFile)
	if err := report.AppendHistory(path, entries); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}
