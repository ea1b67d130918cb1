// Package report turns the runs of an A/B campaign into the results a
// reviewer reads: per-cell statistics and comparisons (computed with
// golang.org/x/perf/benchmath, the library behind benchstat), and the files
// written next to the journal: results.json, results.csv, summary.md, one
// benchstat file per variant, and a chart.
package report

import "time"

// SchemaVersion is the version of the results.json layout. The provider
// refuses documents with a version it does not know; bump it on any
// incompatible change.
const SchemaVersion = 2

// Results is results.json: the contract between the runner and the provider.
type Results struct {
	SchemaVersion int       `json:"schema_version"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	WallSeconds   float64   `json:"wall_seconds"`
	// Command is the runner command line that reproduces the campaign.
	Command  []string  `json:"command"`
	Variants []Variant `json:"variants"`
	Workload Workload  `json:"workload"`
	// Alpha is the family-wise significance level of the verdicts.
	Alpha float64 `json:"alpha"`
	// Method names the comparison method (MethodPairedT or
	// MethodHodgesLehmann) and Correction the adjustment of the p-values
	// across all comparisons of the campaign (CorrectionHolm or
	// CorrectionNone).
	Method     string `json:"method"`
	Correction string `json:"correction"`
	Cells      []Cell `json:"cells"`
	// Runs are in the order they ran.
	Runs []Run `json:"runs"`
	// Sysinfo is the host's `pgbench-runner sysinfo --json` document, kept
	// verbatim so everything that could explain a difference travels with
	// the numbers.
	Sysinfo any `json:"sysinfo,omitempty"`
	// Client is the host that ran pgbench when it was not the server's
	// (a campaign with a client host); nil otherwise.
	Client *ClientHost `json:"client,omitempty"`
	// Warnings are things a reviewer should know (client and server share
	// CPUs, too few iterations for significance, runs that drifted).
	Warnings []string `json:"warnings,omitempty"`
	// Replaced are the pairs of runs the campaign measured again, in the
	// order it did: after a run failed, or because the pair's runs lay far
	// apart in time (a resumed campaign). Runs holds only the new runs.
	Replaced []Replacement `json:"replaced,omitempty"`
}

// Replacement is one pair of runs measured again: every variant's run of
// one client count and iteration, back to back.
type Replacement struct {
	Clients   int       `json:"clients"`
	Iteration int       `json:"iteration"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
	// Failed is the run that failed, when one did: its figure of merit
	// (0, NaN and Inf are written as 0) or the error of pgbench is in
	// Reason.
	Failed *Run `json:"failed,omitempty"`
}

// Variant is one side of the comparison: a build plus settings.
type Variant struct {
	Name   string `json:"name"`
	BinDir string `json:"bin_dir"`
	// Version is what `postgres --version` printed, e.g. "postgres (PostgreSQL) 15.18".
	Version string `json:"version"`
	// BuildKey identifies the pgbench_postgres_build build installed in
	// BinDir's prefix (pgbuild.StampedBuildKey); empty for an installation
	// it did not build.
	BuildKey string `json:"build_key,omitempty"`
	// Settings are the effective postgresql.conf settings: the shared ones
	// with the variant's own on top.
	Settings map[string]string `json:"settings"`
	// HugePages is what was asked for (on, off, try); HugePagesObserved is
	// what the running server really used: "on", "off" or "unknown".
	HugePages         string `json:"huge_pages"`
	HugePagesObserved string `json:"huge_pages_observed"`
	DataDir           string `json:"data_dir"`
}

// Workload is what each run executed.
type Workload struct {
	Mode   string `json:"mode"` // select-only, tpcb, simple-update, custom, tpcc
	Script string `json:"script,omitempty"`
	Scale  int    `json:"scale"`
	// Warehouses is the TPC-C dataset's size (mode tpcc).
	Warehouses int `json:"warehouses,omitempty"`
	// Metric is the figure of merit the statistics and verdicts are about:
	// MetricTPS, or MetricNOPM for TPC-C; "" means MetricTPS.
	Metric          string  `json:"metric,omitempty"`
	Clients         []int   `json:"clients"`
	Threads         string  `json:"threads"` // a number or "auto"
	DurationSeconds float64 `json:"duration_seconds"`
	// Iterations is the fixed number of runs per variant and cell; 0 with
	// IterationsAuto, where each cell's own length is its n.
	Iterations     int  `json:"iterations"`
	IterationsAuto bool `json:"iterations_auto,omitempty"`
	// TargetCIPct, MinIterations and MaxIterations are the adaptive rule:
	// MinIterations pairs first, then as many as an interval of half-width
	// TargetCIPct needs, at most MaxIterations.
	TargetCIPct      float64 `json:"target_ci_pct,omitempty"`
	MinIterations    int     `json:"min_iterations,omitempty"`
	MaxIterations    int     `json:"max_iterations,omitempty"`
	Protocol         string  `json:"protocol"`
	WarmupSeconds    float64 `json:"warmup_seconds"`
	CheckpointBefore bool    `json:"checkpoint_before"`
	Restart          string  `json:"restart"` // never, cell, run
	Order            string  `json:"order"`   // alternate, randomized
	Seed             int64   `json:"seed"`
	ServerNUMA       string  `json:"server_numa,omitempty"`
	ClientNUMA       string  `json:"client_numa,omitempty"`
	// Profile is the profiling mode: none, one-per-cell or every-run;
	// Unwind how the profiles' call stacks were unwound (fp or dwarf) and
	// ProfileOverheadPct the median TPS change of the profiled runs against
	// the unprofiled ones of the same variant and cell (one-per-cell only).
	Profile            string   `json:"profile,omitempty"`
	Unwind             string   `json:"unwind,omitempty"`
	ProfileOverheadPct *float64 `json:"profile_overhead_pct,omitempty"`
	// TPCC is what a TPC-C campaign did to its datasets: their loads and
	// the consistency checks after loading and after the runs.
	TPCC *TPCC `json:"tpcc,omitempty"`
}

// Figures of merit (Workload.Metric).
const (
	MetricTPS  = "tps"
	MetricNOPM = "nopm"
)

// TPCC is the datasets of a TPC-C campaign, by variant.
type TPCC struct {
	// Driver is the version of the workload's schema and transactions.
	Driver   string                 `json:"driver"`
	Datasets map[string]TPCCDataset `json:"datasets"`
}

// TPCCDataset is one variant's dataset.
type TPCCDataset struct {
	// ClonedFrom names the variant whose dataset was copied, when it was.
	ClonedFrom  string  `json:"cloned_from,omitempty"`
	LoadSeconds float64 `json:"load_seconds,omitempty"`
	Bytes       int64   `json:"bytes,omitempty"`
	// LoadCheck and FinalCheck are the consistency conditions checked
	// after the load and after the campaign's last run.
	LoadCheck  *ConsistencyCheck `json:"load_check,omitempty"`
	FinalCheck *ConsistencyCheck `json:"final_check,omitempty"`
}

// ConsistencyCheck is the outcome of TPC-C's consistency conditions
// (clause 3.3.2; internal/tpcc checks them).
type ConsistencyCheck struct {
	Conditions []string `json:"conditions"`
	Passed     bool     `json:"passed"`
	Failures   []string `json:"failures,omitempty"`
	Seconds    float64  `json:"seconds"`
}

// Cell is one client count: each variant's statistics and the comparisons
// of every candidate against the baseline (the first variant).
type Cell struct {
	Clients     int                    `json:"clients"`
	Variants    map[string]VariantCell `json:"variants"`
	Comparisons []Comparison           `json:"comparisons"`
	// DriftPctPerHour is the trend of TPS over the cell's runs, with a
	// level per variant, in percent per hour; nil with too few runs.
	DriftPctPerHour *float64 `json:"drift_pct_per_hour"`
}

// VariantCell summarizes every iteration of one variant at one client count.
type VariantCell struct {
	TPS       []float64 `json:"tps"` // in run order
	MedianTPS float64   `json:"median_tps"`
	MinTPS    float64   `json:"min_tps"`
	MaxTPS    float64   `json:"max_tps"`
	IQRTPS    float64   `json:"iqr_tps"`
	// NOPM and the rest are TPC-C's new orders per minute, in run order,
	// and their statistics; MedianTPM is the median of all transactions
	// per minute.
	NOPM       []float64 `json:"nopm,omitempty"`
	MedianNOPM float64   `json:"median_nopm,omitempty"`
	MinNOPM    float64   `json:"min_nopm,omitempty"`
	MaxNOPM    float64   `json:"max_nopm,omitempty"`
	IQRNOPM    float64   `json:"iqr_nopm,omitempty"`
	MedianTPM  float64   `json:"median_tpm,omitempty"`
	// CV is the coefficient of variation (stddev / mean) of the figure of
	// merit (TPS, or NOPM for TPC-C), a fraction.
	CV        float64 `json:"cv"`
	LatencyMS Latency `json:"latency_ms"` // medians over the iterations
	// TypeLatencyMS are TPC-C's latencies per transaction type, medians
	// over the iterations.
	TypeLatencyMS map[string]Latency `json:"type_latency_ms,omitempty"`
	// DriftingRuns counts iterations whose per-second throughput drifted.
	DriftingRuns int `json:"drifting_runs"`
	// Counters is the median of each counter of Run.Counters over the
	// iterations; CountersCompared the medians the comparisons rank (per
	// transaction where PerTransaction says so, "/tx" appended).
	Counters         map[string]float64 `json:"counters,omitempty"`
	CountersCompared map[string]float64 `json:"counters_compared,omitempty"`
	// ClientBoundRuns counts iterations whose client was saturated.
	ClientBoundRuns int `json:"client_bound_runs,omitempty"`
	// Profile is the variant's pprof file at this client count (all its
	// profiled runs merged), relative to the campaign directory.
	Profile string `json:"profile,omitempty"`
}

// TxType is one TPC-C transaction type's share of a run: completed
// transactions (Rollbacks among them: new orders rolled back on purpose),
// failed ones, and latencies.
type TxType struct {
	Count     int64   `json:"count"`
	Rollbacks int64   `json:"rollbacks,omitempty"`
	Errors    int64   `json:"errors,omitempty"`
	LatencyMS Latency `json:"latency_ms"`
}

// Value is the run's figure of merit under metric (Workload.Metric).
func (r Run) Value(metric string) float64 {
	if metric == MetricNOPM {
		return r.NOPM
	}
	return r.TPS
}

// Latency is in milliseconds. Percentiles come from pgbench's per-transaction
// log, sampled (Run.SamplingRate); zero means the log was not available.
type Latency struct {
	Avg    float64 `json:"avg"`
	Stddev float64 `json:"stddev"`
	P50    float64 `json:"p50"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
}

// Comparison is candidate vs baseline at one client count.
type Comparison struct {
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Method is MethodPairedT or MethodHodgesLehmann. NBaseline and
	// NCandidate are the runs the method used (the number of pairs, twice,
	// when paired).
	Method     string `json:"method"`
	NBaseline  int    `json:"n_baseline"`
	NCandidate int    `json:"n_candidate"`
	// DeltaPct is the method's estimate of the change of the candidate's
	// figure of merit (TPS, or NOPM for TPC-C) relative to the baseline's,
	// in percent: the geometric mean of the pairs' ratios (paired) or the
	// Hodges-Lehmann shift of its log (unpaired).
	DeltaPct float64 `json:"delta_pct"`
	// CILowPct and CIHighPct bound DeltaPct at confidence CILevel, the
	// level at which the interval excludes 0 exactly when the verdict is
	// significant (0.95 for a single comparison at alpha 0.05, higher when
	// the correction across comparisons asks for it); nil when the runs
	// are too few for an interval. Each interval holds at its own level:
	// under Holm's correction they are not simultaneous intervals, and
	// their joint coverage is less than any one level.
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	CILevel   float64  `json:"ci_level"`
	// PValue is the method's two-sided p-value; PAdjusted is it after the
	// correction across the campaign's comparisons, and decides the verdict.
	// Both are 1 when Tested is false.
	PValue    float64 `json:"p_value"`
	PAdjusted float64 `json:"p_adjusted"`
	// Tested says the runs gave a test: enough of them, with spread. When
	// false, p, interval and MDE are not computable and Note says why.
	Tested bool `json:"tested"`
	// Unreachable says the design cannot reach significance whatever the
	// runs show: the smallest p its test can give, after the correction,
	// exceeds alpha. FewestPerSide is then the fewest runs per variant and
	// client count that would do.
	Unreachable   bool `json:"unreachable,omitempty"`
	FewestPerSide int  `json:"fewest_per_side,omitempty"`
	// MDEPct is the smallest change, in percent, that this comparison's
	// test would call with 80% probability given the noise it observed
	// (from the noncentral t); nil when it cannot be estimated or the
	// design is Unreachable.
	MDEPct *float64 `json:"mde_pct"`
	// Verdict is "faster", "slower" or "no-difference" (the candidate,
	// relative to the baseline, at Results.Alpha after the correction).
	Verdict string `json:"verdict"`
	// Note explains a verdict that could not have gone otherwise, e.g. too
	// few runs for a test.
	Note string `json:"note,omitempty"`
	// Differed are the counters that differ between the two variants by a
	// test across the runs, corrected across every counter of the campaign
	// (Holm), largest ratio first (at most MaxDiffered); CountersTested is
	// how many counters were tested for this comparison.
	Differed       []CounterDiff `json:"differed,omitempty"`
	CountersTested int           `json:"counters_tested,omitempty"`
	// FlameGraph is the differential flame graph of the candidate's profile
	// against the baseline's, relative to the campaign directory.
	FlameGraph string `json:"flame_graph,omitempty"`
}

// Run is one pgbench (or TPC-C) execution, as appended to the journal.
type Run struct {
	Seq       int    `json:"seq"` // 1-based position in the campaign's order
	Variant   string `json:"variant"`
	Clients   int    `json:"clients"`
	Iteration int    `json:"iteration"` // 1-based
	// NetworkRTTMS is the round trip between the client host and the
	// server, measured before the run's cell (a query's round trip over a
	// fresh connection's steady state); 0 when pgbench ran on the server.
	NetworkRTTMS float64 `json:"network_rtt_ms,omitempty"`
	// TPS is transactions per second; for TPC-C, of every type.
	TPS float64 `json:"tps"`
	// NOPM and TPM are TPC-C's new orders and transactions per minute;
	// Types its counts and latencies per transaction type.
	NOPM      float64           `json:"nopm,omitempty"`
	TPM       float64           `json:"tpm,omitempty"`
	Types     map[string]TxType `json:"types,omitempty"`
	StartedAt time.Time         `json:"started_at"`
	Seconds   float64           `json:"seconds"` // wall time of the pgbench process
	LatencyMS Latency           `json:"latency_ms"`
	// Transactions and FailedTransactions are pgbench's counts.
	Transactions       int64  `json:"transactions"`
	FailedTransactions int64  `json:"failed_transactions"`
	PgbenchVersion     string `json:"pgbench_version"`
	// SamplingRate is the share of transactions the run wrote to its
	// per-transaction log (pgbench --sampling-rate; 1 for all of them), and
	// LoggedTransactions the successful transactions in that log: the
	// sample the latency percentiles come from.
	SamplingRate       float64 `json:"sampling_rate"`
	LoggedTransactions int64   `json:"logged_transactions"`
	// TPSSeries is throughput per whole second of the run, from its
	// per-transaction log: each line carries its client's count of all
	// transactions, logged or not, so a sampled log gives the same series.
	TPSSeries []float64 `json:"tps_series,omitempty"`
	// Drift says the throughput trended during the run: a fitted change of
	// DriftPct percent from its first to its last second that is both
	// significant against the run's own per-second noise and at least 2%
	// (pgbench.DriftTrend).
	Drift    bool    `json:"drift"`
	DriftPct float64 `json:"drift_pct"`
	// LogDir is where the raw pgbench output and logs of the run are,
	// relative to the campaign directory.
	LogDir string `json:"log_dir"`
	// Counters are the run's OS and PostgreSQL counters, deltas over the
	// run, and its wait events as shares of the sampled active backends
	// (names as internal/observe gives them: os.*, pg.*, wait.*); nil when
	// not recorded.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Client is pgbench's CPU use over the run; ClientBound says it used at
	// least ClientBoundShare of what it may use, so the run may have
	// measured the client rather than the server.
	Client      *ClientCPU `json:"client,omitempty"`
	ClientBound bool       `json:"client_bound,omitempty"`
	// Profiled says perf recorded the server during the run; Profile is the
	// run's pprof file, relative to the campaign directory. A profiled run
	// of a campaign that does not profile every run is an extra run, left
	// out of the statistics.
	Profiled bool   `json:"profiled,omitempty"`
	Profile  string `json:"profile,omitempty"`
}

// ClientHost is the host that ran pgbench for a campaign with a client
// host: its address as the server saw it, the server's address as it
// reached it, its pgbench and its facts.
type ClientHost struct {
	Address        string `json:"address"`
	ServerAddress  string `json:"server_address"`
	PgbenchVersion string `json:"pgbench_version"`
	Kernel         string `json:"kernel"`
	CPUModel       string `json:"cpu_model,omitempty"`
	CPUs           int    `json:"cpus"`
	MemoryBytes    int64  `json:"memory_bytes"`
}
