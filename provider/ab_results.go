package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// The typed `results` attribute of pgbench_ab_benchmark: one object per
// client count, so a `check` block can say
// `pgbench_ab_benchmark.x.results[0].comparisons[0].verdict != "slower"`.

var abVariantCellAttrTypes = map[string]attr.Type{
	"tps":               types.ListType{ElemType: types.Float64Type},
	"median_tps":        types.Float64Type,
	"min_tps":           types.Float64Type,
	"max_tps":           types.Float64Type,
	"cv":                types.Float64Type,
	"iqr_tps":           types.Float64Type,
	"latency_avg_ms":    types.Float64Type,
	"latency_p99_ms":    types.Float64Type,
	"drifting_runs":     types.Int64Type,
	"client_bound_runs": types.Int64Type,
	"profile":           types.StringType,
	"nopm":              types.ListType{ElemType: types.Float64Type},
	"median_nopm":       types.Float64Type,
	"median_tpm":        types.Float64Type,
}

var abDifferedAttrTypes = map[string]attr.Type{
	"name":       types.StringType,
	"baseline":   types.Float64Type,
	"candidate":  types.Float64Type,
	"ratio":      types.Float64Type,
	"ratio_low":  types.Float64Type,
	"ratio_high": types.Float64Type,
	"p_adjusted": types.Float64Type,
}

var abComparisonAttrTypes = map[string]attr.Type{
	"baseline":    types.StringType,
	"candidate":   types.StringType,
	"method":      types.StringType,
	"n_baseline":  types.Int64Type,
	"n_candidate": types.Int64Type,
	"delta_pct":   types.Float64Type,
	"ci_low_pct":  types.Float64Type,
	"ci_high_pct": types.Float64Type,
	"ci_level":    types.Float64Type,
	"p_value":     types.Float64Type,
	"p_adjusted":  types.Float64Type,
	"mde_pct":     types.Float64Type,
	"verdict":     types.StringType,
	"note":        types.StringType,
	"differed":    types.ListType{ElemType: types.ObjectType{AttrTypes: abDifferedAttrTypes}},
	"flame_graph": types.StringType,
}

var abCellAttrTypes = map[string]attr.Type{
	"clients":            types.Int64Type,
	"drift_pct_per_hour": types.Float64Type,
	"variants":           types.MapType{ElemType: types.ObjectType{AttrTypes: abVariantCellAttrTypes}},
	"comparisons":        types.ListType{ElemType: types.ObjectType{AttrTypes: abComparisonAttrTypes}},
}

var abCellType = types.ObjectType{AttrTypes: abCellAttrTypes}

// abVariantCellModel and the other *Model types mirror the attr types above
// for ObjectValueFrom.
type abVariantCellModel struct {
	TPS          []float64 `tfsdk:"tps"`
	MedianTPS    float64   `tfsdk:"median_tps"`
	MinTPS       float64   `tfsdk:"min_tps"`
	MaxTPS       float64   `tfsdk:"max_tps"`
	CV           float64   `tfsdk:"cv"`
	IQRTPS       float64   `tfsdk:"iqr_tps"`
	LatencyAvgMS float64   `tfsdk:"latency_avg_ms"`
	LatencyP99MS float64   `tfsdk:"latency_p99_ms"`
	DriftingRuns int64     `tfsdk:"drifting_runs"`
	ClientBound  int64     `tfsdk:"client_bound_runs"`
	Profile      string    `tfsdk:"profile"`
	NOPM         []float64 `tfsdk:"nopm"`
	MedianNOPM   float64   `tfsdk:"median_nopm"`
	MedianTPM    float64   `tfsdk:"median_tpm"`
}

type abDifferedModel struct {
	Name      string  `tfsdk:"name"`
	Baseline  float64 `tfsdk:"baseline"`
	Candidate float64 `tfsdk:"candidate"`
	Ratio     float64 `tfsdk:"ratio"`
	RatioLow  float64 `tfsdk:"ratio_low"`
	RatioHigh float64 `tfsdk:"ratio_high"`
	PAdjusted float64 `tfsdk:"p_adjusted"`
}

type abComparisonModel struct {
	Baseline   string            `tfsdk:"baseline"`
	Candidate  string            `tfsdk:"candidate"`
	Method     string            `tfsdk:"method"`
	NBaseline  int64             `tfsdk:"n_baseline"`
	NCandidate int64             `tfsdk:"n_candidate"`
	DeltaPct   float64           `tfsdk:"delta_pct"`
	CILowPct   types.Float64     `tfsdk:"ci_low_pct"`
	CIHighPct  types.Float64     `tfsdk:"ci_high_pct"`
	CILevel    float64           `tfsdk:"ci_level"`
	PValue     float64           `tfsdk:"p_value"`
	PAdjusted  float64           `tfsdk:"p_adjusted"`
	MDEPct     types.Float64     `tfsdk:"mde_pct"`
	Verdict    string            `tfsdk:"verdict"`
	Note       string            `tfsdk:"note"`
	Differed   []abDifferedModel `tfsdk:"differed"`
	FlameGraph string            `tfsdk:"flame_graph"`
}

type abCellModel struct {
	Clients         int64                         `tfsdk:"clients"`
	DriftPctPerHour types.Float64                 `tfsdk:"drift_pct_per_hour"`
	Variants        map[string]abVariantCellModel `tfsdk:"variants"`
	Comparisons     []abComparisonModel           `tfsdk:"comparisons"`
}

// abResultsAttribute is the schema of the computed `results`.
func abResultsAttribute() schema.ListNestedAttribute {
	f := func(desc string) schema.Float64Attribute {
		return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
	}
	s := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	return schema.ListNestedAttribute{
		Computed: true,
		MarkdownDescription: "The campaign's statistics, one object per client count in the order of " +
			"`workload.clients`. Use it in `check` blocks or postconditions to fail a pipeline on a regression.",
		NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{
				"clients": schema.Int64Attribute{Computed: true, MarkdownDescription: "Client count of this cell."},
				"drift_pct_per_hour": f("Trend of TPS across this cell's runs in percent per hour, with a level per variant; null with too few runs. " +
					"A large drift next to a delta means the order of runs, not the variants, may explain it."),
				"variants": schema.MapNestedAttribute{
					Computed:            true,
					MarkdownDescription: "Each variant's statistics at this client count, by variant name.",
					NestedObject: schema.NestedAttributeObject{
						Attributes: map[string]schema.Attribute{
							"tps": schema.ListAttribute{Computed: true, ElementType: types.Float64Type,
								MarkdownDescription: "TPS of every iteration, in run order."},
							"median_tps":     f("Median TPS over the iterations."),
							"min_tps":        f("Lowest TPS of the iterations."),
							"max_tps":        f("Highest TPS of the iterations."),
							"cv":             f("Coefficient of variation (stddev / mean) of TPS (NOPM in mode `tpcc`), a fraction."),
							"iqr_tps":        f("Interquartile range of TPS over the iterations."),
							"latency_avg_ms": f("Median over the iterations of pgbench's average latency, in ms."),
							"latency_p99_ms": f("Median over the iterations of the 99th percentile latency, in ms (0 when pgbench's log was not available)."),
							"drifting_runs": schema.Int64Attribute{Computed: true,
								MarkdownDescription: "Iterations whose throughput drifted during the run."},
							"client_bound_runs": schema.Int64Attribute{Computed: true,
								MarkdownDescription: "Iterations whose pgbench used at least 90% of the CPU it may use (its threads, affinity and cgroup quota): " +
									"their TPS may measure the client, not the server. 0 without `observe.counters`."},
							"profile": s("The variant's pprof profile at this client count (all its profiled runs merged), relative to the report directory; empty without `observe.profile`."),
							"nopm": schema.ListAttribute{Computed: true, ElementType: types.Float64Type,
								MarkdownDescription: "Mode `tpcc`: new orders per minute of every iteration, in run order (empty otherwise). The verdicts of a TPC-C campaign are on NOPM."},
							"median_nopm": f("Mode `tpcc`: median NOPM over the iterations; 0 otherwise."),
							"median_tpm":  f("Mode `tpcc`: median TPM (completed transactions of every type per minute) over the iterations; 0 otherwise."),
						},
					},
				},
				"comparisons": schema.ListNestedAttribute{
					Computed:            true,
					MarkdownDescription: "Each candidate variant against the baseline (the first variant).",
					NestedObject: schema.NestedAttributeObject{
						Attributes: map[string]schema.Attribute{
							"baseline":  s("Name of the baseline variant."),
							"candidate": s("Name of the candidate variant."),
							"method": s("`paired-t-log-ratio` (order `alternate`: a paired t test on the log ratios of the runs paired by iteration) or " +
								"`hodges-lehmann-mann-whitney` (order `randomized`: the Hodges-Lehmann shift of log TPS with the exact Mann-Whitney test and interval)."),
							"n_baseline":  schema.Int64Attribute{Computed: true, MarkdownDescription: "Baseline runs the method used (pairs, when paired)."},
							"n_candidate": schema.Int64Attribute{Computed: true, MarkdownDescription: "Candidate runs the method used (pairs, when paired)."},
							"delta_pct":   f("The method's estimate of the candidate's change in TPS (NOPM in mode `tpcc`), in %: the geometric mean of the pairs' ratios, or the Hodges-Lehmann shift."),
							"ci_low_pct":  f("Lower bound of the delta's interval at `ci_level`, in %; null when the runs are too few (under 3 pairs, or 4 runs per side)."),
							"ci_high_pct": f("Upper bound of the delta's interval at `ci_level`, in %; null when the runs are too few."),
							"ci_level": f("Confidence level of the interval: 0.95 for one comparison at alpha 0.05, higher where Holm's correction asks for it, " +
								"so that the interval excludes 0 exactly when the verdict is significant. Each interval holds at its own level: they are not simultaneous intervals, " +
								"and all of a campaign's intervals together hold the true changes less often than any one level says."),
							"p_value":    f("The method's two-sided p-value, before correction; 1 when the runs gave no test (too few, or no spread: see `note`)."),
							"p_adjusted": f("p-value after Holm's correction across all comparisons of the campaign; the verdict uses it."),
							"mde_pct": f("Smallest change, in %, this comparison would call with 80% probability given the noise it observed (from the noncentral t); " +
								"null when unknown, or when the design cannot reach significance at all (`note` then names the fewest iterations that would)."),
							"verdict": s("`faster`, `slower` or `no-difference` (the candidate relative to the baseline, at `alpha` after the correction)."),
							"note":    s("Why the verdict could not have gone otherwise (e.g. too few iterations), or empty."),
							"differed": schema.ListNestedAttribute{
								Computed: true,
								MarkdownDescription: "The counters that differ between the two variants by a test across the runs (a paired t test on the log ratios, or Welch's t test on the logs for a randomized order), " +
									"with Holm's correction across every counter of the campaign; largest ratio first, at most 12 (the \"what differed\" table of the summary). " +
									"Counts per transaction (`/tx`), wait events as shares of the sampled active backends. Empty when no counter differs.",
								NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
									"name":       s("Counter, e.g. `pg.tup_returned/tx`, `os.cpu.system_s/tx`, `wait.LWLock:BufferMapping`."),
									"baseline":   f("Median of the baseline's runs."),
									"candidate":  f("Median of the candidate's runs."),
									"ratio":      f("Estimated candidate / baseline ratio (the geometric mean of the pairs' ratios when paired); a counter at 0 in some runs is offset by 0.1% of its largest value."),
									"ratio_low":  f("Lower end of the ratio's interval, at the level that agrees with `p_adjusted`."),
									"ratio_high": f("Upper end of the ratio's interval."),
									"p_adjusted": f("The counter's p-value after Holm's correction across every counter of the campaign; at most `alpha`."),
								}},
							},
							"flame_graph": s("Differential flame graph SVG of the candidate's profile against the baseline's, relative to the report directory; empty without profiles."),
						},
					},
				},
			},
		},
	}
}

// orEmpty is xs, or an empty list for nil: a known, empty list in state.
func orEmpty(xs []float64) []float64 {
	if xs == nil {
		return []float64{}
	}
	return xs
}

// abResultsValue converts results.json cells into the typed `results` list.
func abResultsValue(ctx context.Context, res *report.Results) (types.List, error) {
	cells := make([]abCellModel, 0, len(res.Cells))
	for _, c := range res.Cells {
		m := abCellModel{Clients: int64(c.Clients), DriftPctPerHour: types.Float64PointerValue(c.DriftPctPerHour), Variants: map[string]abVariantCellModel{}, Comparisons: []abComparisonModel{}}
		for name, v := range c.Variants {
			m.Variants[name] = abVariantCellModel{
				TPS: orEmpty(v.TPS), MedianTPS: v.MedianTPS, MinTPS: v.MinTPS, MaxTPS: v.MaxTPS, CV: v.CV, IQRTPS: v.IQRTPS,
				LatencyAvgMS: v.LatencyMS.Avg, LatencyP99MS: v.LatencyMS.P99, DriftingRuns: int64(v.DriftingRuns),
				ClientBound: int64(v.ClientBoundRuns), Profile: v.Profile,
				NOPM: orEmpty(v.NOPM), MedianNOPM: v.MedianNOPM, MedianTPM: v.MedianTPM,
			}
		}
		for _, cmp := range c.Comparisons {
			differed := []abDifferedModel{}
			for _, d := range cmp.Differed {
				differed = append(differed, abDifferedModel{Name: d.Name, Baseline: d.Baseline, Candidate: d.Candidate, Ratio: d.Ratio,
					RatioLow: d.RatioLow, RatioHigh: d.RatioHigh, PAdjusted: d.PAdjusted})
			}
			m.Comparisons = append(m.Comparisons, abComparisonModel{
				Baseline: cmp.Baseline, Candidate: cmp.Candidate, Method: cmp.Method,
				NBaseline: int64(cmp.NBaseline), NCandidate: int64(cmp.NCandidate), DeltaPct: cmp.DeltaPct,
				CILowPct: types.Float64PointerValue(cmp.CILowPct), CIHighPct: types.Float64PointerValue(cmp.CIHighPct), CILevel: cmp.CILevel,
				PValue: cmp.PValue, PAdjusted: cmp.PAdjusted, MDEPct: types.Float64PointerValue(cmp.MDEPct),
				Verdict: cmp.Verdict, Note: cmp.Note, Differed: differed, FlameGraph: cmp.FlameGraph,
			})
		}
		cells = append(cells, m)
	}
	l, diags := types.ListValueFrom(ctx, abCellType, cells)
	if diags.HasError() {
		return types.ListNull(abCellType), fmt.Errorf("build results: %v", diags)
	}
	return l, nil
}

// abHugePagesObserved maps each variant to the huge pages its server really
// used ("on", "off" or "unknown").
func abHugePagesObserved(res *report.Results) types.Map {
	m := map[string]attr.Value{}
	for _, v := range res.Variants {
		m[v.Name] = types.StringValue(v.HugePagesObserved)
	}
	return types.MapValueMust(types.StringType, m)
}

// abSysinfoJSON renders the host facts recorded with the results as a JSON
// string, with sorted keys so the state is stable.
func abSysinfoJSON(res *report.Results) (string, error) {
	if res.Sysinfo == nil {
		return "{}", nil
	}
	b, err := json.Marshal(res.Sysinfo)
	if err != nil {
		return "", fmt.Errorf("encode sysinfo: %w", err)
	}
	return string(b), nil
}

// abClientHostJSON renders the client host's facts recorded with the
// results as a JSON string; null for a campaign without a client host.
func abClientHostJSON(res *report.Results) (types.String, error) {
	if res.Client == nil {
		return types.StringNull(), nil
	}
	b, err := json.Marshal(res.Client)
	if err != nil {
		return types.StringNull(), fmt.Errorf("encode the client host: %w", err)
	}
	return types.StringValue(string(b)), nil
}

// abCostUSD is the cost of a campaign's wall time at an hourly price, for
// cost_usd; null without a price or a wall time.
func abCostUSD(hourly, wallSeconds types.Float64) types.Float64 {
	if hourly.IsNull() || hourly.IsUnknown() || wallSeconds.IsNull() || wallSeconds.IsUnknown() {
		return types.Float64Null()
	}
	return types.Float64Value(ec2host.CostUSD(hourly.ValueFloat64(), time.Duration(wallSeconds.ValueFloat64()*float64(time.Second))))
}

// logABSummary logs one line per comparison when the campaign is done.
func logABSummary(ctx context.Context, res *report.Results) {
	for _, c := range res.Cells {
		for _, cmp := range c.Comparisons {
			tflog.Info(ctx, fmt.Sprintf("%d clients: %s vs %s: %+.2f%% (adjusted p=%.3f): %s", c.Clients, cmp.Candidate, cmp.Baseline, cmp.DeltaPct, cmp.PAdjusted, cmp.Verdict),
				map[string]any{"clients": c.Clients, "baseline": cmp.Baseline, "candidate": cmp.Candidate,
					"median_baseline_tps": c.Variants[cmp.Baseline].MedianTPS, "median_candidate_tps": c.Variants[cmp.Candidate].MedianTPS})
		}
	}
}

// setResults fills the computed attributes from results.json.
func (m *abBenchmarkModel) setResults(ctx context.Context, res *report.Results) diag.Diagnostics {
	var d diag.Diagnostics
	l, err := abResultsValue(ctx, res)
	if err != nil {
		d.AddError("Unreadable Campaign Results", err.Error())
		return d
	}
	m.Results = l
	m.StartedAt = types.StringValue(res.StartedAt.UTC().Format(time.RFC3339))
	m.FinishedAt = types.StringValue(res.FinishedAt.UTC().Format(time.RFC3339))
	m.WallSeconds = types.Float64Value(res.WallSeconds)
	m.CostUSD = abCostUSD(m.HourlyPriceUSD, m.WallSeconds)
	si, err := abSysinfoJSON(res)
	if err != nil {
		d.AddError("Unreadable Campaign Results", err.Error())
		return d
	}
	m.Sysinfo = types.StringValue(si)
	if m.ClientHost, err = abClientHostJSON(res); err != nil {
		d.AddError("Unreadable Campaign Results", err.Error())
		return d
	}
	m.HugePagesObserved = abHugePagesObserved(res)
	warnings := res.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	w, diags := types.ListValueFrom(ctx, types.StringType, warnings)
	d.Append(diags...)
	m.Warnings = w
	return d
}
