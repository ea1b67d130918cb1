package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	posixpath "path"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

var _ resource.ResourceWithValidateConfig = (*perfBisectResource)(nil)
var _ resource.ResourceWithConfigure = (*perfBisectResource)(nil)

// NewPerfBisectResource returns the pgbench_perf_bisect resource.
func NewPerfBisectResource() resource.Resource { return &perfBisectResource{} }

type perfBisectResource struct {
	data *providerData
}

// A bisect builds several commits and runs a campaign per step: hours on
// real hardware, like a long campaign.
const (
	bisectDefaultCreateTimeout = 24 * time.Hour
	bisectDefaultDeleteTimeout = 30 * time.Minute
)

func (r *perfBisectResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_perf_bisect"
}

func (r *perfBisectResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	rs := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	ri := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	rl := []planmodifier.List{listplanmodifier.RequiresReplace()}
	rb := []planmodifier.Bool{boolplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, PlanModifiers: keep,
			MarkdownDescription: "Bisect key: a hash of the bisect's definition."},
		"host_connection": connectionInputAttribute(),
		"git_url": schema.StringAttribute{Required: true, PlanModifiers: rs, MarkdownDescription: bisectDoc("git_url",
			"The host mirrors it (a full clone, kept under `git_cache`), so it must reach it.")},
		"good":        schema.StringAttribute{Required: true, PlanModifiers: rs, MarkdownDescription: bisectDoc("good")},
		"bad":         schema.StringAttribute{Required: true, PlanModifiers: rs, MarkdownDescription: bisectDoc("bad")},
		"direction":   schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: bisectDoc("direction")},
		"step_rounds": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: bisectDoc("step_rounds")},
		"patches": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: rl,
			MarkdownDescription: "Patch contents (not paths) applied with `patch -p1` to every commit built, e.g. `[file(\"debug.patch\")]`; " +
				"a commit the patches do not apply to is skipped."},
		"configure_flags": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: rl,
			MarkdownDescription: "Extra `configure` flags of every build, e.g. `[\"--without-icu\"]`."},
		"cflags": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: "`CFLAGS` of every build."},
		"profiling": schema.BoolAttribute{Optional: true, PlanModifiers: rb,
			MarkdownDescription: "Build every commit for profiling: `" + pgbuild.FramePointerFlags + "` added to `cflags`."},
		"jobs": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
			MarkdownDescription: "`make -j` jobs; by default the host's CPU count."},
		"install_deps": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Install the missing build dependencies, ccache included, with the host's package manager first."},
		"ccache": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Compile through ccache, so that each build reuses the objects of the builds before it, and the results of their `configure` when its script and flags are the same (default `true`); " +
				"ccache must be installed: `install_deps`, or `ccache` in the `pgbench_host`'s `bootstrap.packages`."},
		"ccache_dir": schema.StringAttribute{Optional: true,
			MarkdownDescription: "ccache's cache directory on the host; the kept `configure` results go in its `pgbench-configure` subdirectory. Default `" + pgbuild.DefaultCCacheDir + "`."},
		"build_root": schema.StringAttribute{Optional: true, PlanModifiers: rs,
			MarkdownDescription: "Directory on the host of the builds, one prefix per build key. Default `" + posixpath.Base(runnerclient.BisectBuildRoot("/")) + "` beside the runner; " +
				"destroy removes the builds this bisect made."},
		"keep_builds": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Keep the builds this bisect made when it is destroyed, for a later bisect of an overlapping range " +
				"(or a `pgbench_postgres_build` with the same source and flags) to reuse. By default destroy removes them; builds it reused are never removed."},
		"git_cache": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Directory on the host of the repository mirrors. Default `" + bisect.DefaultGitCache + "`."},
		"settings": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			MarkdownDescription: "postgresql.conf settings of every server, e.g. `{ shared_buffers = \"1GB\" }`."},
		"seed": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("seed")},
		"alpha": schema.Float64Attribute{Optional: true, PlanModifiers: []planmodifier.Float64{float64planmodifier.RequiresReplace()},
			MarkdownDescription: campaignDoc("alpha", "It decides every step, so changing it starts a new bisect.")},
	}
	// The campaign of every step is read from the campaign blocks
	// pgbench_ab_benchmark has too.
	for k, v := range campaignPinningAttributes() {
		attrs[k] = v
	}
	for k, v := range bisectResultAttributes() {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A performance bisect on a host (`pgbench-runner bisect`): between a good and a bad commit of a PostgreSQL " +
			"repository it builds commits (cached by build key, through ccache), measures each against both ends with the " +
			"`pgbench_ab_benchmark` engine and statistics, and halves the range until the first bad commit is known. " +
			"The endpoints are checked first: when they do not differ in `direction`, the outcome is `nothing-to-bisect`. " +
			"Every argument but the build's speed settings forces a new bisect. An interrupted apply resumes from the host's journal " +
			"when applied again with the same configuration. Destroy removes the bisect's data directories and the builds it made " +
			"(unless `keep_builds`), and moves its reports aside on the host.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"workload": campaignWorkloadBlock(),
			"client":   campaignClientBlock(),
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (r *perfBisectResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks at plan time what the runner would refuse before
// it starts: the bisect's fields (good equal to bad, the direction, too few
// iterations to decide) and the campaign's, at their attributes. Whether
// the refs resolve, and good is an ancestor of bad, needs the repository:
// the runner checks that before it builds anything.
func (r *perfBisectResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m perfBisectModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Workload == nil {
		resp.Diagnostics.AddAttributeError(path.Root("workload"), "Missing Workload",
			"A workload block is required, with at least clients, e.g. workload { clients = [1] duration = \"30s\" iterations = 5 }.")
	}
	c, unknown, diags := bisectConfig(ctx, &m)
	resp.Diagnostics.Append(diags...)
	bisectValidate(c, unknown, &resp.Diagnostics)
	checkClientHost(m.Connection, m.Client, &resp.Diagnostics)
}

func (r *perfBisectResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan perfBisectModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, bisectDefaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, _, diags := bisectConfig(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := cfg.Validate(); err != nil {
		resp.Diagnostics.AddError("Invalid Bisect", fmt.Sprintf("The bisect cannot run: %v. Fix the configuration and apply again.", err))
		return
	}
	cfg.Campaign.SeedFromDefinition()
	conn, ex, ok := dialHost(ctx, plan.Connection, "the performance bisect", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	runnerPath := conn.RunnerPath.ValueString()
	installDir := posixpath.Dir(runnerPath)
	paths, ok := uploadPatches(ctx, ex, runnerPath, "patches", listStrings(ctx, plan.Patches), &resp.Diagnostics)
	if !ok {
		return
	}
	cfg.Build.Patches = paths
	if plan.BuildRoot.IsNull() {
		cfg.Build.Root = runnerclient.BisectBuildRoot(installDir)
	}
	// The same configuration always gives the same directory: that is
	// what lets a failed apply resume. Bisects live beside the campaigns,
	// so that uninstalling the runner removes their data too.
	key := cfg.Key()
	cfg.Campaign.OutDir = campaign.Dir(installDir, key)
	args := append(append([]string{"bisect"}, cfg.Args()...), "--progress-json")
	dir := cfg.Campaign.OutDir
	tflog.Info(ctx, "starting performance bisect", map[string]any{"report_dir": dir, "command": strings.Join(args, " ")})

	// State is saved only when the bisect finished: a failed or
	// interrupted Create leaves nothing in state, so the next apply runs
	// the same command in the same directory and the runner resumes from
	// its journal.
	prog := &campaignProgress{ctx: ctx}
	rc := conn.runner(ex)
	rc.OnEvent = func(e campaign.Event) { bisectEvent(prog, e) }
	rc.OnStderr, rc.KillGrace = prog.line, campaignStopGrace
	if !plan.Client.feed(ctx, &rc, &resp.Diagnostics) {
		return
	}
	var doc json.RawMessage
	err := rc.Run(ctx, &doc, args...)
	for _, w := range prog.warnings {
		resp.Diagnostics.AddWarning("Bisect Warning", w)
	}
	if err != nil {
		var re *runnerclient.Error
		if errors.As(err, &re) && re.Kind == runnerclient.KindUsage {
			resp.Diagnostics.AddError("Bisect Refused", fmt.Sprintf("The runner refused the bisect before building anything: %s. "+
				"Fix good, bad or git_url (the refs must name commits of the repository, good an ancestor of bad, with more than one commit between them).", re.Message))
			return
		}
		detail := fmt.Sprintf("The bisect in %s on the host failed: %v. Finished builds and runs are kept (%s/%s and each step's campaign journal): "+
			"apply again with the same configuration to resume from there.", dir, err, dir, bisect.JournalFile)
		if ctx.Err() != nil {
			detail += fmt.Sprintf(" The create timeout (%s) or an interrupt stopped it; raise timeouts.create for longer bisects.", timeout)
		}
		resp.Diagnostics.AddError("Performance Bisect Failed", detail)
		return
	}
	res, err := bisect.DecodeResult(doc, dir+"/"+bisect.ResultsFile)
	if err != nil {
		resp.Diagnostics.AddError("Unreadable Bisect Results", fmt.Sprintf("%v. Upgrade the provider or the runner so that they match.", err))
		return
	}
	plan.ID = types.StringValue(key)
	resp.Diagnostics.Append(plan.setBisectResults(ctx, res)...)
	if resp.Diagnostics.HasError() {
		return
	}
	tflog.Info(ctx, "bisect: "+res.Answer)
	switch res.Outcome {
	case bisect.OutcomeNothing:
		resp.Diagnostics.AddWarning("Nothing To Bisect", upperFirst(res.Answer)+".")
	case bisect.OutcomeRange:
		resp.Diagnostics.AddWarning("No Single First Bad Commit", upperFirst(res.Answer)+". See suspects and summary_markdown.")
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// bisectEvent logs a bisect's steps at INFO and passes the campaigns'
// events to campaignProgress.
func bisectEvent(p *campaignProgress, e campaign.Event) {
	if e.Event == bisect.EventStepStart || e.Event == bisect.EventStepDone {
		fields := map[string]any{"step": e.Seq, "steps": e.Total}
		if e.ETASeconds != nil {
			fields["eta_seconds"] = *e.ETASeconds
		}
		tflog.Info(p.ctx, "bisect: "+e.Message, fields)
		return
	}
	p.event(e)
}

// Read keeps the recorded results: they describe a bisect that ran.
func (r *perfBisectResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state perfBisectModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update sees changes of the arguments that only say how a bisect runs
// (jobs, ccache, the caches, install_deps), of keep_builds and of the
// timeouts: a finished bisect keeps its results.
func (r *perfBisectResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state perfBisectModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.Timeouts, state.Jobs, state.InstallDeps = plan.Timeouts, plan.Jobs, plan.InstallDeps
	state.Connection = plan.Connection
	state.CCache, state.CCacheDir, state.GitCache, state.KeepBuilds = plan.CCache, plan.CCacheDir, plan.GitCache, plan.KeepBuilds
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *perfBisectResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state perfBisectModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, bisectDefaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, ex, ok := dialHost(ctx, state.Connection, "removing the bisect's data and builds", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	dir := state.ReportDir.ValueString()
	now := time.Now
	if r.data != nil && r.data.now != nil {
		now = r.data.now
	}
	// The reports move aside, so that a later bisect with the same
	// configuration runs again instead of resuming this finished one.
	kept := dir + ".destroyed-" + now().UTC().Format("20060102T150405Z")
	var out struct {
		Removed []string `json:"removed"`
		KeptIn  string   `json:"reports_kept_in"`
	}
	args := []string{"bisect", "--out", dir, "--remove-data", "--keep-reports-as", kept}
	if !state.KeepBuilds.ValueBool() {
		args = append(args, "--remove-builds")
	}
	if err := conn.runner(ex).Run(ctx, &out, args...); err != nil {
		resp.Diagnostics.AddError("Bisect Data Not Removed", fmt.Sprintf("Remove the data directories and builds of the bisect in %s, and move its reports to %s: %v. "+
			"Destroy again once the host is reachable.", dir, kept, err))
		return
	}
	tflog.Info(ctx, "removed the bisect from the host", map[string]any{"report_dir": dir, "reports_kept_in": out.KeptIn, "removed": out.Removed})
}

type perfBisectModel struct {
	ID             types.String `tfsdk:"id"`
	Connection     types.Object `tfsdk:"host_connection"`
	GitURL         types.String `tfsdk:"git_url"`
	Good           types.String `tfsdk:"good"`
	Bad            types.String `tfsdk:"bad"`
	Direction      types.String `tfsdk:"direction"`
	StepRounds     types.Int64  `tfsdk:"step_rounds"`
	Patches        types.List   `tfsdk:"patches"`
	ConfigureFlags types.List   `tfsdk:"configure_flags"`
	CFlags         types.String `tfsdk:"cflags"`
	Profiling      types.Bool   `tfsdk:"profiling"`
	Jobs           types.Int64  `tfsdk:"jobs"`
	InstallDeps    types.Bool   `tfsdk:"install_deps"`
	CCache         types.Bool   `tfsdk:"ccache"`
	CCacheDir      types.String `tfsdk:"ccache_dir"`
	BuildRoot      types.String `tfsdk:"build_root"`
	KeepBuilds     types.Bool   `tfsdk:"keep_builds"`
	GitCache       types.String `tfsdk:"git_cache"`
	campaignModel

	Outcome          types.String  `tfsdk:"outcome"`
	Answer           types.String  `tfsdk:"answer"`
	FirstBadCommit   types.Object  `tfsdk:"first_bad_commit"`
	Suspects         types.List    `tfsdk:"suspects"`
	EndpointsOutcome types.String  `tfsdk:"endpoints_outcome"`
	Endpoints        types.List    `tfsdk:"endpoints"`
	Steps            types.List    `tfsdk:"steps"`
	SummaryMarkdown  types.String  `tfsdk:"summary_markdown"`
	ReportDir        types.String  `tfsdk:"report_dir"`
	StartedAt        types.String  `tfsdk:"started_at"`
	FinishedAt       types.String  `tfsdk:"finished_at"`
	WallSeconds      types.Float64 `tfsdk:"wall_seconds"`
	BuildSeconds     types.Float64 `tfsdk:"build_seconds"`
	MeasureSeconds   types.Float64 `tfsdk:"measure_seconds"`
	Warnings         types.List    `tfsdk:"warnings"`

	Timeouts timeouts.Value `tfsdk:"timeouts"`
}
