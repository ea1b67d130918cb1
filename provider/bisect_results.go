package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
)

// The computed attributes of pgbench_perf_bisect: the first bad commit,
// the steps, the endpoints and the suspects, typed so that a `check` block
// can read them.

var bisectCommitAttrTypes = map[string]attr.Type{
	"hash":        types.StringType,
	"subject":     types.StringType,
	"author_date": types.StringType,
}

var bisectSuspectAttrTypes = map[string]attr.Type{
	"hash":        types.StringType,
	"subject":     types.StringType,
	"author_date": types.StringType,
	"status":      types.StringType,
}

var bisectDeltaAttrTypes = map[string]attr.Type{
	"delta_pct":   types.Float64Type,
	"ci_low_pct":  types.Float64Type,
	"ci_high_pct": types.Float64Type,
	"p_adjusted":  types.Float64Type,
	"verdict":     types.StringType,
}

var bisectEndpointAttrTypes = map[string]attr.Type{
	"clients":     types.Int64Type,
	"bad_vs_good": types.ObjectType{AttrTypes: bisectDeltaAttrTypes},
}

var bisectStepCellAttrTypes = map[string]attr.Type{
	"clients": types.Int64Type,
	"vs_good": types.ObjectType{AttrTypes: bisectDeltaAttrTypes},
	"vs_bad":  types.ObjectType{AttrTypes: bisectDeltaAttrTypes},
	"class":   types.StringType,
}

var bisectStepAttrTypes = map[string]attr.Type{
	"n":               types.Int64Type,
	"position":        types.Int64Type,
	"commit":          types.StringType,
	"subject":         types.StringType,
	"author_date":     types.StringType,
	"class":           types.StringType,
	"rounds":          types.Int64Type,
	"cells":           types.ListType{ElemType: types.ObjectType{AttrTypes: bisectStepCellAttrTypes}},
	"build_seconds":   types.Float64Type,
	"build_cached":    types.BoolType,
	"measure_seconds": types.Float64Type,
	"note":            types.StringType,
}

type bisectCommitModel struct {
	Hash       string `tfsdk:"hash"`
	Subject    string `tfsdk:"subject"`
	AuthorDate string `tfsdk:"author_date"`
}

type bisectSuspectModel struct {
	Hash       string `tfsdk:"hash"`
	Subject    string `tfsdk:"subject"`
	AuthorDate string `tfsdk:"author_date"`
	Status     string `tfsdk:"status"`
}

type bisectDeltaModel struct {
	DeltaPct  float64       `tfsdk:"delta_pct"`
	CILowPct  types.Float64 `tfsdk:"ci_low_pct"`
	CIHighPct types.Float64 `tfsdk:"ci_high_pct"`
	PAdjusted float64       `tfsdk:"p_adjusted"`
	Verdict   string        `tfsdk:"verdict"`
}

type bisectEndpointModel struct {
	Clients   int64            `tfsdk:"clients"`
	BadVsGood bisectDeltaModel `tfsdk:"bad_vs_good"`
}

type bisectStepCellModel struct {
	Clients int64            `tfsdk:"clients"`
	VsGood  bisectDeltaModel `tfsdk:"vs_good"`
	VsBad   bisectDeltaModel `tfsdk:"vs_bad"`
	Class   string           `tfsdk:"class"`
}

type bisectStepModel struct {
	N              int64                 `tfsdk:"n"`
	Position       int64                 `tfsdk:"position"`
	Commit         string                `tfsdk:"commit"`
	Subject        string                `tfsdk:"subject"`
	AuthorDate     string                `tfsdk:"author_date"`
	Class          string                `tfsdk:"class"`
	Rounds         int64                 `tfsdk:"rounds"`
	Cells          []bisectStepCellModel `tfsdk:"cells"`
	BuildSeconds   float64               `tfsdk:"build_seconds"`
	BuildCached    bool                  `tfsdk:"build_cached"`
	MeasureSeconds float64               `tfsdk:"measure_seconds"`
	Note           string                `tfsdk:"note"`
}

// bisectResultAttributes are the schema of the computed results.
func bisectResultAttributes() map[string]schema.Attribute {
	s := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	f := func(desc string) schema.Float64Attribute {
		return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
	}
	i := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	commit := map[string]schema.Attribute{
		"hash":        s("The commit's full hash."),
		"subject":     s("The first line of its message."),
		"author_date": s("Its author date (RFC 3339)."),
	}
	delta := func(what string) schema.SingleNestedAttribute {
		return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: what, Attributes: map[string]schema.Attribute{
			"delta_pct":   f("Change of TPS in %."),
			"ci_low_pct":  f("Lower bound of its interval in %, at the level where it agrees with the verdict; null with too few runs."),
			"ci_high_pct": f("Upper bound of its interval in %; null with too few runs."),
			"p_adjusted":  f("p-value after Holm's correction across the comparisons of the look."),
			"verdict":     s("`faster`, `slower` or `no-difference`, at alpha / `step_rounds`."),
		}}
	}
	return map[string]schema.Attribute{
		"outcome": s("`first-bad-commit`, `range` (skipped commits left several suspects: see `suspects`) or `nothing-to-bisect` " +
			"(good and bad do not differ significantly in `direction`: see `endpoints`)."),
		"answer": s("The outcome in a sentence, with the numbers that decided it."),
		"first_bad_commit": schema.SingleNestedAttribute{Computed: true, Attributes: commit,
			MarkdownDescription: "The first commit that performs like bad; null unless `outcome` is `first-bad-commit`."},
		"suspects": schema.ListNestedAttribute{Computed: true,
			MarkdownDescription: "With `outcome = \"range\"`: the commits that may be the first bad one, oldest first, each with its `status` " +
				"(`skipped` when it stayed unclear, `build-failed` when it did not build, `bad` for the first known bad commit).",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"hash": commit["hash"], "subject": commit["subject"], "author_date": commit["author_date"],
				"status": s("`skipped`, `build-failed` or `bad`."),
			}}},
		"endpoints_outcome": s("`confirmed` (bad differs from good in `direction` at every client count), `no-difference` or `opposite`."),
		"endpoints": schema.ListNestedAttribute{Computed: true,
			MarkdownDescription: "Bad against good, per client count, as measured before the first step.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"clients":     i("Client count."),
				"bad_vs_good": delta("Bad's TPS against good's."),
			}}},
		"steps": schema.ListNestedAttribute{Computed: true,
			MarkdownDescription: "The commits tested, in order: each built, then measured in one campaign with good and bad.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"n":           i("Step number, from 1."),
				"position":    i("The commit's place on bad's first-parent line: good is 0, bad the number of commits."),
				"commit":      commit["hash"],
				"subject":     commit["subject"],
				"author_date": commit["author_date"],
				"class": s("`good` (performs like good), `bad` (like bad), `skipped` (still unclear after `step_rounds` rounds) " +
					"or `build-failed`."),
				"rounds": i("Rounds of the workload's iterations it was measured for."),
				"cells": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Per client count: the commit against good and against bad.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"clients": i("Client count."),
						"vs_good": delta("The commit's TPS against good's."),
						"vs_bad":  delta("The commit's TPS against bad's."),
						"class":   s("`good`, `bad` or `unclear` at this client count."),
					}}},
				"build_seconds":   f("How long its build took (or the check of a cached one)."),
				"build_cached":    schema.BoolAttribute{Computed: true, MarkdownDescription: "True when an earlier build with the same build key was used."},
				"measure_seconds": f("Wall time of its campaigns."),
				"note":            s("Why it was skipped, or empty."),
			}}},
		"summary_markdown": s("The bisect's summary.md: the answer, the endpoints, a table of the steps with their intervals, the decision rule, " +
			"the builds, the time taken and the command that reproduces it."),
		"report_dir":      s("Directory on the host with the journal, bisect.json, summary.md and the campaigns of the endpoints and of every step."),
		"started_at":      s("When the bisect started (RFC 3339)."),
		"finished_at":     s("When it finished (RFC 3339)."),
		"wall_seconds":    f("Wall time from start to finish in seconds, interruptions included."),
		"build_seconds":   f("Time spent building, in seconds."),
		"measure_seconds": f("Time spent measuring, in seconds."),
		"warnings": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Things a reviewer should know: commits that did not build, campaign warnings (shared CPUs, drifting runs)."},
	}
}

func commitModel(c bisect.Commit) bisectCommitModel {
	return bisectCommitModel{Hash: c.Hash, Subject: c.Subject, AuthorDate: c.AuthorDate.UTC().Format(time.RFC3339)}
}

func deltaModel(d bisect.Delta) bisectDeltaModel {
	return bisectDeltaModel{DeltaPct: d.DeltaPct, CILowPct: types.Float64PointerValue(d.CILowPct), CIHighPct: types.Float64PointerValue(d.CIHighPct),
		PAdjusted: d.PAdjusted, Verdict: d.Verdict}
}

// setBisectResults fills the computed attributes from bisect.json.
func (m *perfBisectModel) setBisectResults(ctx context.Context, res *bisect.Result) diag.Diagnostics {
	var d diag.Diagnostics
	add := func(v attr.Value, diags diag.Diagnostics) attr.Value {
		d.Append(diags...)
		return v
	}
	m.Outcome = types.StringValue(res.Outcome)
	m.Answer = types.StringValue(res.Answer)
	commitType := types.ObjectType{AttrTypes: bisectCommitAttrTypes}
	m.FirstBadCommit = types.ObjectNull(bisectCommitAttrTypes)
	if res.FirstBad != nil {
		m.FirstBadCommit = add(types.ObjectValueFrom(ctx, commitType.AttrTypes, commitModel(*res.FirstBad))).(types.Object)
	}
	suspects := []bisectSuspectModel{}
	for _, rc := range res.Range {
		c := commitModel(rc.Commit)
		suspects = append(suspects, bisectSuspectModel{Hash: c.Hash, Subject: c.Subject, AuthorDate: c.AuthorDate, Status: rc.Status})
	}
	m.Suspects = add(types.ListValueFrom(ctx, types.ObjectType{AttrTypes: bisectSuspectAttrTypes}, suspects)).(types.List)
	m.EndpointsOutcome = types.StringValue(res.Endpoints.Outcome)
	endpoints := []bisectEndpointModel{}
	for _, e := range res.Endpoints.Cells {
		endpoints = append(endpoints, bisectEndpointModel{Clients: int64(e.Clients), BadVsGood: deltaModel(e.BadVsGood)})
	}
	m.Endpoints = add(types.ListValueFrom(ctx, types.ObjectType{AttrTypes: bisectEndpointAttrTypes}, endpoints)).(types.List)
	steps := []bisectStepModel{}
	for _, st := range res.Steps {
		c := commitModel(st.Commit)
		cells := []bisectStepCellModel{}
		for _, sc := range st.Cells {
			cells = append(cells, bisectStepCellModel{Clients: int64(sc.Clients), VsGood: deltaModel(sc.VsGood), VsBad: deltaModel(sc.VsBad), Class: sc.Class})
		}
		steps = append(steps, bisectStepModel{N: int64(st.N), Position: int64(st.Position), Commit: c.Hash, Subject: c.Subject, AuthorDate: c.AuthorDate,
			Class: st.Class, Rounds: int64(st.Rounds), Cells: cells, BuildSeconds: st.Build.Seconds, BuildCached: st.Build.Cached,
			MeasureSeconds: st.MeasureSeconds, Note: st.Note})
	}
	m.Steps = add(types.ListValueFrom(ctx, types.ObjectType{AttrTypes: bisectStepAttrTypes}, steps)).(types.List)
	var md strings.Builder
	if err := bisect.WriteMarkdown(&md, res); err != nil {
		d.AddError("Unreadable Bisect Results", fmt.Sprintf("Render the summary: %v.", err))
	}
	m.SummaryMarkdown = types.StringValue(md.String())
	m.ReportDir = types.StringValue(res.Dir)
	m.StartedAt = types.StringValue(res.StartedAt.UTC().Format(time.RFC3339))
	m.FinishedAt = types.StringValue(res.FinishedAt.UTC().Format(time.RFC3339))
	m.WallSeconds = types.Float64Value(res.WallSeconds)
	m.BuildSeconds = types.Float64Value(res.BuildSeconds)
	m.MeasureSeconds = types.Float64Value(res.MeasureSeconds)
	warnings := res.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	m.Warnings = add(types.ListValueFrom(ctx, types.StringType, warnings)).(types.List)
	return d
}
