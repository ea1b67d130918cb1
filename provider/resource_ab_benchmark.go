package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	posixpath "path"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

var _ resource.ResourceWithValidateConfig = (*abBenchmarkResource)(nil)
var _ resource.ResourceWithConfigure = (*abBenchmarkResource)(nil)

// NewABBenchmarkResource returns the pgbench_ab_benchmark resource.
func NewABBenchmarkResource() resource.Resource { return &abBenchmarkResource{} }

type abBenchmarkResource struct {
	data *providerData
}

// Campaigns on real hardware run for hours (scale 3000, 60 s runs, many
// client counts); a short default would kill them half way. An update
// measures nothing: it recomputes from the journal and collects the
// report again, which moves the raw logs (gigabytes at long durations).
const (
	abDefaultCreateTimeout = 24 * time.Hour
	abDefaultUpdateTimeout = time.Hour
	abDefaultDeleteTimeout = 30 * time.Minute
)

func (r *abBenchmarkResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ab_benchmark"
}

func (r *abBenchmarkResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	rs := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	ri := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	rm := []planmodifier.Map{mapplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One A/B pgbench campaign on a host (`pgbench-runner ab`): two or more variants " +
			"(a build plus settings plus huge pages), run alternately at each client count, with per-cell " +
			"medians, a confidence interval, a p-value and a verdict as computed attributes. " +
			"Every argument forces a new campaign. An interrupted apply resumes from the host's journal " +
			"when applied again with the same configuration. The finished report is collected into `local_dir` on the machine running Terraform. " +
			"Destroy removes the campaign's data directories and its reports from the host (`keep_on_host` keeps the reports there).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Campaign key: a hash of the campaign's definition.",
				PlanModifiers:       keep,
			},
			// Terraform reserves the root name "connection" (provisioner
			// connection blocks), and the framework refuses a schema that uses it.
			"host_connection": connectionInputAttribute(),
			"settings": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "postgresql.conf settings shared by all variants, e.g. `{ shared_buffers = \"1GB\" }`. A variant's own settings win.",
				PlanModifiers:       rm,
			},
			"seed": schema.Int64Attribute{Optional: true, PlanModifiers: ri,
				MarkdownDescription: campaignDoc("seed", "Derived when unset, so that applying the same configuration again resumes the same order.")},
			"alpha": schema.Float64Attribute{Optional: true, MarkdownDescription: campaignDoc("alpha",
				"Changing it recomputes the verdicts from the host's journal (`pgbench-runner compare`) without measuring again.")},
			"results":          abResultsAttribute(),
			"summary_markdown": schema.StringAttribute{Computed: true, MarkdownDescription: "The campaign's summary.md: a Markdown table ready for a mailing-list post, with the host, the settings and the command to reproduce."},
			"report_dir":       schema.StringAttribute{Computed: true, MarkdownDescription: "Directory on the host with the journal, results.json/csv, summary.md, benchstat files, the chart and raw pgbench logs."},
			"local_dir": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Directory on the machine running Terraform that the finished campaign's report is collected into: " +
					"journal.jsonl, results.json/csv, summary.md, the chart, sysinfo.json, the benchstat files and the raw logs as " +
					"`logs.tar.gz`, each verified by sha256. While the campaign runs it holds a live `progress.log` (`tail -f` it). " +
					"Relative paths are relative to Terraform's working directory; default `pgbench-results/<id>`. " +
					"Changing it collects the report again into the new directory, without measuring.",
			},
			"keep_on_host": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Keep the reports on the host at destroy, moved to `<report_dir>.destroyed-<UTC time>`. " +
					"By default destroy removes them there: the collected copy in `local_dir` is the one that stays.",
			},
			"local_report_dir": schema.StringAttribute{Computed: true, MarkdownDescription: "Absolute path of the collected report (`local_dir` resolved)."},
			"local_files": schema.MapAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "The collected report's files, by name, with their sha256 (checked against the host's after the transfer).",
			},
			"started_at":   schema.StringAttribute{Computed: true, MarkdownDescription: "When the campaign started (RFC 3339)."},
			"finished_at":  schema.StringAttribute{Computed: true, MarkdownDescription: "When the campaign finished (RFC 3339)."},
			"wall_seconds": schema.Float64Attribute{Computed: true, MarkdownDescription: "Wall time of the campaign in seconds."},
			"sysinfo":      schema.StringAttribute{Computed: true, MarkdownDescription: "Host facts recorded with the results (JSON): kernel, CPU, NUMA, tuning, huge pages."},
			"client_host": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "With a `client` block, the client host's facts recorded with the results (JSON): `address` (as the server saw it), " +
					"`server_address` (the server's address it reached), `pgbench_version`, `kernel`, `cpu_model`, `cpus` and `memory_bytes`; null without one.",
			},
			"hourly_price_usd": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: "Hourly price of the host in USD, for `cost_usd`: e.g. `pgbench_host.<name>.ec2.hourly_price_usd`. " +
					"Changing it recomputes the cost without running the campaign again.",
				Validators: []validator.Float64{float64validator.AtLeast(0)},
			},
			"cost_usd": schema.Float64Attribute{
				Computed:            true,
				MarkdownDescription: "What the campaign's wall time cost at `hourly_price_usd`; null without a price.",
			},
			"huge_pages_observed": schema.MapAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "Per variant, the huge pages its server really used: `on`, `off` or `unknown`.",
			},
			"warnings": schema.ListAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "Things a reviewer should know (shared CPUs, too few iterations for significance, drifting runs).",
			},
		},
		Blocks: map[string]schema.Block{
			"variant": schema.ListNestedBlock{
				MarkdownDescription: "A side of the comparison (two or more; the first is the baseline).",
				PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"name":    schema.StringAttribute{Required: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("variant.name")},
						"bin_dir": schema.StringAttribute{Required: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("variant.bin_dir")},
						"settings": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: rm,
							MarkdownDescription: "postgresql.conf settings of this variant only, on top of the shared `settings`; values may hold any character."},
						"huge_pages": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("variant.huge_pages")},
					},
				},
			},
			"workload": campaignWorkloadBlock(),
			"client":   campaignClientBlock(),
			"observe": schema.SingleNestedBlock{
				MarkdownDescription: "What each measured run records beside its TPS, to explain a difference: counters (on by default), " +
					"wait events, the client's CPU use (a client-bound run is flagged and warned about) and, on request, perf profiles of the server " +
					"with a differential flame graph per comparison (collected into `local_dir` under `profiles/`).",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"counters": schema.BoolAttribute{Optional: true, MarkdownDescription: campaignDoc("observe.counters"),
						PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()}},
					"wait_sample_interval": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("observe.wait_sample_interval",
						"A duration: `100ms`, `1s`, or `0s`.")},
					"profile": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("observe.profile",
						"perf must be installed on the host (`packages = [\"linux-perf\"]` on `pgbench_host`, or `pgbench-runner bootstrap --tools perf`); "+
							"a `pgbench_postgres_build` with `profiling = true` gives complete call stacks cheaply (frame pointers).")},
					"profile_frequency": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("observe.profile_frequency")},
				},
			},
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
				CreateDescription: fmt.Sprintf("How long the campaign may run, a duration such as `36h` (default %s).", abDefaultCreateTimeout),
				UpdateDescription: fmt.Sprintf("How long an update may take to recompute the statistics at a new `alpha` and collect "+
					"the report again (nothing is measured again), a duration such as `2h` (default %s).", abDefaultUpdateTimeout),
				DeleteDescription: fmt.Sprintf("How long removing the data directories may take (default %s).", abDefaultDeleteTimeout)}),
		},
	}
	for k, v := range campaignPinningAttributes() {
		resp.Schema.Attributes[k] = v
	}
}

func (r *abBenchmarkResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks at plan time everything the runner would refuse
// before it starts, with the campaign's own validation, so a mistake costs a
// plan, not a campaign. Faults about values not known yet wait for apply.
func (r *abBenchmarkResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m abBenchmarkModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Workload == nil {
		resp.Diagnostics.AddAttributeError(path.Root("workload"), "Missing Workload", "A workload block is required, with at least clients, e.g. workload { mode = \"select-only\" clients = [1, 16] }.")
	}
	c, unknown, diags := abConfig(ctx, &m)
	resp.Diagnostics.Append(diags...)
	abValidate(c, unknown, &resp.Diagnostics)
	checkClientHost(m.Connection, m.Client, &resp.Diagnostics)
	if w := m.Workload; w != nil {
		// The fewest iterations with a test: 3 pairs, or 4 runs per side
		// when a randomized order leaves the runs unpaired.
		fewest := report.MinPairs
		if m.Order.ValueString() == campaign.OrderRandomized {
			fewest = report.MinPerSide
		}
		if it := w.Iterations; !it.IsNull() && !it.IsUnknown() && !c.IterationsAuto && c.Iterations >= 1 && c.Iterations < fewest {
			resp.Diagnostics.AddAttributeWarning(path.Root("workload").AtName("iterations"), "Too Few Iterations For A Verdict", fmt.Sprintf(
				"With %d iterations per variant the comparison has no test and no interval (it needs at least %d with this order): every verdict will be no-difference. "+
					"Use 10 or more to detect a change of a few percent on a noisy host.", c.Iterations, fewest))
		}
		known := true
		for _, f := range []string{"iterations", "clients", "order", "alpha", "variant"} {
			known = known && !unknown.covers(fieldAttrPath(campaign.Path{Flag: f, Index: -1}, campaign.FieldByFlag))
		}
		if known {
			if msg := c.DesignWarning(); msg != "" {
				resp.Diagnostics.AddAttributeWarning(path.Root("workload").AtName("iterations"), "Design Cannot Reach Significance", fmt.Sprintf(
					"This campaign would run without being able to call any change: %s.", msg))
			}
		}
	}
}

func (r *abBenchmarkResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan abBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, abDefaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cfg, err := abCampaign(ctx, &plan)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Campaign", fmt.Sprintf("The campaign cannot run: %v. Fix the configuration and apply again.", err))
		return
	}
	conn, ex, ok := dialHost(ctx, plan.Connection, "the A/B campaign", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	// Campaigns live beside the runner pgbench_host installed (and removes).
	full := abCommand(cfg, posixpath.Dir(conn.RunnerPath.ValueString()))
	key, dir := cfg.Key(), cfg.OutDir

	// State is saved only when the campaign finished. A failed or
	// interrupted Create leaves nothing in state, so the next apply calls
	// Create again with the same arguments and the same directory, and the
	// runner resumes from its journal instead of Terraform tainting the
	// resource and throwing the finished runs away.
	local, err := abLocalDir(plan.LocalDir.ValueString(), key)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("local_dir"), "Invalid Local Directory", fmt.Sprintf("local_dir %q: %v.", plan.LocalDir.ValueString(), err))
		return
	}
	plog := openProgressLog(ctx, local)
	defer plog.Close()
	tflog.Info(ctx, "starting A/B campaign", map[string]any{"report_dir": dir, "local_report_dir": local, "command": strings.Join(full, " ")})
	plog.line("campaign " + key + " on " + ex.String() + " in " + dir)
	prog := &campaignProgress{ctx: ctx, log: plog}
	var doc json.RawMessage
	// On cancel the runner stops pgbench and the server and keeps its
	// journal; a server killed mid-shutdown would keep its huge pages.
	rc := conn.runner(ex)
	rc.OnEvent, rc.OnStderr, rc.KillGrace = prog.event, prog.line, campaignStopGrace
	if !plan.Client.feed(ctx, &rc, &resp.Diagnostics) {
		return
	}
	err = rc.Run(ctx, &doc, full...)
	for _, w := range prog.warnings {
		resp.Diagnostics.AddWarning("Campaign Warning", w)
	}
	if err != nil {
		detail := fmt.Sprintf("The campaign in %s on the host failed: %v.", dir, err)
		var re *runnerclient.Error
		if !errors.As(err, &re) || re.Kind != "usage" {
			detail += fmt.Sprintf(" Finished runs are kept in %s/journal.jsonl: apply again with the same configuration to resume "+
				"from there (only the missing runs run), or change the configuration to start a new campaign.", dir)
		}
		if ctx.Err() != nil {
			detail += fmt.Sprintf(" The create timeout (%s) or an interrupt stopped it; raise timeouts.create for longer campaigns.", timeout)
		}
		resp.Diagnostics.AddError("A/B Campaign Failed", detail)
		return
	}
	res, err := report.DecodeResults(doc, dir+"/results.json")
	if err != nil {
		resp.Diagnostics.AddError("Unreadable Campaign Results", fmt.Sprintf("%v. Upgrade the provider or the runner so that they match.", err))
		return
	}

	plan.ID = types.StringValue(key)
	plan.ReportDir = types.StringValue(dir)
	resp.Diagnostics.Append(plan.setCampaignResults(ctx, res, dir)...)
	if resp.Diagnostics.HasError() {
		return
	}
	logABSummary(ctx, res)
	resp.Diagnostics.Append(plan.collect(ctx, conn, ex, res, local, r.data.historyURL, plog)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// collect brings the finished campaign's report home into local and sets
// local_report_dir and local_files. On failure nothing is in state yet, so
// the next apply finds the finished journal and collects again.
func (m *abBenchmarkModel) collect(ctx context.Context, conn connectionModel, ex remote.Executor, res *report.Results, local, dbURL string, plog *progressLog) diag.Diagnostics {
	var d diag.Diagnostics
	dir := m.ReportDir.ValueString()
	logf := func(s string) {
		plog.line(s)
		tflog.Info(ctx, s)
	}
	sums, err := collectReport(ctx, conn, ex, dir, local, logf)
	if err != nil {
		d.AddError("Campaign Report Not Collected", fmt.Sprintf("The campaign in %s on the host finished, but collecting its report into %s failed: %v. "+
			"Apply again: the finished campaign is taken from the host's journal, without measuring, and collected again.", dir, local, err))
		return d
	}
	m.LocalReportDir = types.StringValue(local)
	m.LocalFiles, d = types.MapValueFrom(ctx, types.StringType, sums)
	if res != nil {
		// A campaign's first collection goes into the history beside it
		// and into the results database.
		d.Append(recordHistory(ctx, dbURL, local, m.ID.ValueString(), report.HistoryEntries(res, m.ID.ValueString(), time.Now().UTC()), logf)...)
	}
	return d
}

// setCampaignResults sets the summary and every computed result attribute
// from results.json.
func (m *abBenchmarkModel) setCampaignResults(ctx context.Context, res *report.Results, dir string) diag.Diagnostics {
	var d diag.Diagnostics
	// The same renderer as the runner's summary.md, so no second round trip.
	var summary strings.Builder
	if err := report.WriteMarkdown(&summary, res); err != nil {
		d.AddError("Unreadable Campaign Results", fmt.Sprintf("Render the summary of %s: %v.", dir, err))
		return d
	}
	m.SummaryMarkdown = types.StringValue(summary.String())
	d.Append(m.setResults(ctx, res)...)
	return d
}

// Read keeps the recorded results: they describe a campaign that ran, and
// re-reading the host would only add a way to fail (a rebooted or
// terminated box) without changing what was measured.
func (r *abBenchmarkResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state abBenchmarkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Campaigns an earlier apply could not write to the results database
	// are written now.
	if r.data != nil && state.LocalReportDir.ValueString() != "" {
		resp.Diagnostics.Append(pushPendingHistory(ctx, r.data.historyURL, historyBeside(state.LocalReportDir.ValueString()),
			func(s string) { tflog.Info(ctx, s) })...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update sees changes of alpha, the price and timeouts: every other
// argument forces a new campaign. A new alpha recomputes the statistics
// from the campaign's journal on the host, measuring nothing.
func (r *abBenchmarkResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state abBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, done, ok := timeoutContext(ctx, "update", plan.Timeouts.Update, abDefaultUpdateTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer done()
	state.Timeouts = plan.Timeouts
	state.Connection = plan.Connection
	state.HourlyPriceUSD = plan.HourlyPriceUSD
	state.KeepOnHost = plan.KeepOnHost
	recollect := !plan.LocalDir.Equal(state.LocalDir)
	state.LocalDir = plan.LocalDir
	if !plan.Alpha.Equal(state.Alpha) {
		cfg, err := abCampaign(ctx, &plan)
		if err != nil {
			resp.Diagnostics.AddError("Invalid Campaign", fmt.Sprintf("The campaign cannot be recomputed: %v.", err))
			return
		}
		conn, ex, ok := dialHost(ctx, plan.Connection, "recomputing the campaign at the new alpha", &resp.Diagnostics)
		if !ok {
			return
		}
		defer ex.Close()
		dir := state.ReportDir.ValueString()
		var doc json.RawMessage
		args := []string{"compare", dir, "--alpha", strconv.FormatFloat(cfg.Alpha, 'g', -1, 64), "--write"}
		if err := conn.runner(ex).Run(ctx, &doc, args...); err != nil {
			resp.Diagnostics.AddError("Campaign Not Recomputed", fmt.Sprintf("Recomputing the campaign in %s at alpha %g failed: %v. "+
				"The journal on the host is needed; if the host is gone, set alpha back or replace the resource to measure again.", dir, cfg.Alpha, err))
			return
		}
		res, err := report.DecodeResults(doc, dir+"/results.json")
		if err != nil {
			resp.Diagnostics.AddError("Unreadable Campaign Results", fmt.Sprintf("%v. Upgrade the provider or the runner so that they match.", err))
			return
		}
		state.Alpha = plan.Alpha
		resp.Diagnostics.Append(state.setCampaignResults(ctx, res, dir)...)
		if resp.Diagnostics.HasError() {
			return
		}
		logABSummary(ctx, res)
		recollect = true
	}
	if recollect {
		resp.Diagnostics.Append(r.recollect(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	state.CostUSD = abCostUSD(state.HourlyPriceUSD, state.WallSeconds)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// recollect collects the report of the campaign in state again, into its
// (new) local_dir: after a recompute at a new alpha, or a new local_dir.
func (r *abBenchmarkResource) recollect(ctx context.Context, state *abBenchmarkModel) diag.Diagnostics {
	var d diag.Diagnostics
	local, err := abLocalDir(state.LocalDir.ValueString(), state.ID.ValueString())
	if err != nil {
		d.AddAttributeError(path.Root("local_dir"), "Invalid Local Directory", fmt.Sprintf("local_dir %q: %v.", state.LocalDir.ValueString(), err))
		return d
	}
	conn, ex, ok := dialHost(ctx, state.Connection, "collecting the campaign's report", &d)
	if !ok {
		return d
	}
	defer ex.Close()
	plog := openProgressLog(ctx, local)
	defer plog.Close()
	d.Append(state.collect(ctx, conn, ex, nil, local, r.data.historyURL, plog)...)
	return d
}

func (r *abBenchmarkResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state abBenchmarkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, abDefaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, ex, ok := dialHost(ctx, state.Connection, "removing the campaign's data directories", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	dir := state.ReportDir.ValueString()
	// The reports go, or with keep_on_host move aside: either way a later
	// campaign with the same configuration measures again instead of
	// finding this finished journal and resuming it.
	args := []string{"ab", "--out", dir, "--remove-data", "--remove-reports"}
	what := "remove its reports"
	// Reports never collected (a campaign created by a provider before
	// collection existed) are the only copy: they are kept, as then.
	collected := !state.LocalFiles.IsNull() && !state.LocalFiles.IsUnknown() && len(state.LocalFiles.Elements()) > 0
	if state.KeepOnHost.ValueBool() || !collected {
		now := time.Now
		if r.data != nil && r.data.now != nil {
			now = r.data.now
		}
		kept := dir + ".destroyed-" + now().UTC().Format("20060102T150405Z")
		args = []string{"ab", "--out", dir, "--remove-data", "--keep-reports-as", kept}
		what = "move its reports to " + kept
	}
	var out struct {
		Removed []string `json:"removed"`
		KeptIn  string   `json:"reports_kept_in"`
	}
	if err := conn.runner(ex).Run(ctx, &out, args...); err != nil {
		resp.Diagnostics.AddError("Campaign Data Not Removed", fmt.Sprintf("Remove the data directories of the campaign in %s and %s: %v. "+
			"Destroy again once the host is reachable; until then, applying the same configuration would find the finished journal and reuse its results.", dir, what, err))
		return
	}
	tflog.Info(ctx, "removed the campaign from the host", map[string]any{"report_dir": dir, "reports_kept_in": out.KeptIn, "removed": out.Removed})
}

// variants decodes the variant blocks.
func (m *abBenchmarkModel) variants(ctx context.Context) ([]abVariantModel, diag.Diagnostics) {
	var vs []abVariantModel
	if m.Variants.IsNull() {
		return vs, nil
	}
	d := m.Variants.ElementsAs(ctx, &vs, false)
	return vs, d
}

type abBenchmarkModel struct {
	ID         types.String `tfsdk:"id"`
	Connection types.Object `tfsdk:"host_connection"`
	Variants   types.List   `tfsdk:"variant"`
	campaignModel
	Observe           *abObserveModel `tfsdk:"observe"`
	Results           types.List      `tfsdk:"results"`
	SummaryMarkdown   types.String    `tfsdk:"summary_markdown"`
	ReportDir         types.String    `tfsdk:"report_dir"`
	LocalDir          types.String    `tfsdk:"local_dir"`
	KeepOnHost        types.Bool      `tfsdk:"keep_on_host"`
	LocalReportDir    types.String    `tfsdk:"local_report_dir"`
	LocalFiles        types.Map       `tfsdk:"local_files"`
	StartedAt         types.String    `tfsdk:"started_at"`
	FinishedAt        types.String    `tfsdk:"finished_at"`
	WallSeconds       types.Float64   `tfsdk:"wall_seconds"`
	HourlyPriceUSD    types.Float64   `tfsdk:"hourly_price_usd"`
	CostUSD           types.Float64   `tfsdk:"cost_usd"`
	Sysinfo           types.String    `tfsdk:"sysinfo"`
	ClientHost        types.String    `tfsdk:"client_host"`
	HugePagesObserved types.Map       `tfsdk:"huge_pages_observed"`
	Warnings          types.List      `tfsdk:"warnings"`
	Timeouts          timeouts.Value  `tfsdk:"timeouts"`
}

// abVariantAttrTypes are the attribute types of a variant block.
var abVariantAttrTypes = map[string]attr.Type{
	"name":       types.StringType,
	"bin_dir":    types.StringType,
	"settings":   types.MapType{ElemType: types.StringType},
	"huge_pages": types.StringType,
}

type abVariantModel struct {
	Name      types.String `tfsdk:"name"`
	BinDir    types.String `tfsdk:"bin_dir"`
	Settings  types.Map    `tfsdk:"settings"`
	HugePages types.String `tfsdk:"huge_pages"`
}

type abObserveModel struct {
	Counters           types.Bool   `tfsdk:"counters"`
	WaitSampleInterval types.String `tfsdk:"wait_sample_interval"`
	Profile            types.String `tfsdk:"profile"`
	ProfileFrequency   types.Int64  `tfsdk:"profile_frequency"`
}
