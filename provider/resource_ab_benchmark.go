package provider

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	posixpath "path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
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
)

var _ resource.ResourceWithValidateConfig = (*abBenchmarkResource)(nil)
var _ resource.ResourceWithConfigure = (*abBenchmarkResource)(nil)

// abConnAttr names the connection argument. Terraform reserves the root
// name "connection" (provisioner connection blocks), and the framework
// refuses a schema that uses it.
const abConnAttr = "host_connection"

// abStopGrace is how long a cancelled campaign gets to stop its servers
// cleanly before it is killed.
const abStopGrace = 2 * time.Minute

// NewABBenchmarkResource returns the pgbench_ab_benchmark resource.
func NewABBenchmarkResource() resource.Resource { return &abBenchmarkResource{} }

type abBenchmarkResource struct {
	data *providerData
}

// Campaigns on real hardware run for hours (scale 3000, 60 s runs, many
// client counts); a short default would kill them half way.
const (
	abDefaultCreateTimeout = 24 * time.Hour
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
			"when applied again with the same configuration. Destroy removes the data directories and keeps the reports, " +
			"moved to `<report_dir>.destroyed-<UTC time>` so that a later campaign with the same configuration measures again.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Campaign key: a hash of the campaign's definition.",
				PlanModifiers:       keep,
			},
			abConnAttr: connectionInputAttribute(true),
			"settings": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "postgresql.conf settings shared by all variants, e.g. `{ shared_buffers = \"1GB\" }`. A variant's own settings win.",
				PlanModifiers:       rm,
			},
			"server_numa": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "`numactl` pinning of the postmaster, e.g. `cpunodebind=0,membind=0`.",
				PlanModifiers:       rs,
			},
			"client_numa": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "`numactl` pinning of pgbench, e.g. `cpunodebind=1,membind=1`.",
				PlanModifiers:       rs,
			},
			"order": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "`alternate` (default: ABAB at each client count, the first variant rotated each iteration) " +
					"or `randomized` (with `seed`).",
				Validators:    []validator.String{stringvalidator.OneOf("alternate", "randomized")},
				PlanModifiers: rs,
			},
			"seed": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Seed of `order = \"randomized\"`. When unset it is derived from the campaign's definition, " +
					"so that applying the same configuration again resumes the same order.",
				PlanModifiers: ri,
			},
			"alpha": schema.Float64Attribute{
				Optional:            true,
				MarkdownDescription: "Significance level of the verdicts, default 0.05.",
				Validators:          []validator.Float64{float64validator.Between(0.0001, 0.5)},
				PlanModifiers:       []planmodifier.Float64{float64planmodifier.RequiresReplace()},
			},
			"results":          abResultsAttribute(),
			"summary_markdown": schema.StringAttribute{Computed: true, MarkdownDescription: "The campaign's summary.md: a Markdown table ready for a mailing-list post, with the host, the settings and the command to reproduce."},
			"report_dir":       schema.StringAttribute{Computed: true, MarkdownDescription: "Directory on the host with the journal, results.json/csv, summary.md, benchstat files, the chart and raw pgbench logs."},
			"started_at":       schema.StringAttribute{Computed: true, MarkdownDescription: "When the campaign started (RFC 3339)."},
			"finished_at":      schema.StringAttribute{Computed: true, MarkdownDescription: "When the campaign finished (RFC 3339)."},
			"wall_seconds":     schema.Float64Attribute{Computed: true, MarkdownDescription: "Wall time of the campaign in seconds."},
			"sysinfo":          schema.StringAttribute{Computed: true, MarkdownDescription: "Host facts recorded with the results (JSON): kernel, CPU, NUMA, tuning, huge pages."},
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
						"name": schema.StringAttribute{
							Required:            true,
							MarkdownDescription: "Variant name: letters, digits, `.`, `_`, `-`.",
							PlanModifiers:       rs,
						},
						"bin_dir": schema.StringAttribute{
							Required:            true,
							MarkdownDescription: "Directory with `postgres`, `initdb`, `pg_ctl` and `pgbench`, e.g. `pgbench_postgres_build.x.bin_dir`.",
							PlanModifiers:       rs,
						},
						"settings": schema.MapAttribute{
							ElementType:         types.StringType,
							Optional:            true,
							MarkdownDescription: "postgresql.conf settings of this variant only (values may not contain `,` or `;`).",
							PlanModifiers:       rm,
						},
						"huge_pages": schema.StringAttribute{
							Optional: true,
							MarkdownDescription: "`on`, `off` or `try` (PostgreSQL's default). With `on` the runner checks that the " +
								"server really took its memory from the huge-page pool.",
							PlanModifiers: rs,
						},
					},
				},
			},
			"workload": schema.SingleNestedBlock{
				MarkdownDescription: "What each run executes (required).",
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"mode": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "`select-only` (default), `tpcb`, `simple-update` or `custom`."},
					"script": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "Path on the host of the pgbench script for `mode = \"custom\"`."},
					"scale": schema.Int64Attribute{Optional: true, PlanModifiers: ri,
						MarkdownDescription: "pgbench scale factor (`-s`), default 10.",
						Validators:          []validator.Int64{int64validator.AtLeast(1)}},
					"clients": schema.ListAttribute{ElementType: types.Int64Type, Optional: true,
						PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
						MarkdownDescription: "Client counts, e.g. `[1, 16, 64]` (required)."},
					"duration": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "Length of each measured run in whole seconds, e.g. `60s` (default) or `2m`."},
					"iterations": schema.Int64Attribute{Optional: true, PlanModifiers: ri,
						MarkdownDescription: "Runs per variant and client count, default 5 (4 is the fewest with which a difference can reach significance at alpha 0.05)."},
					"threads": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "pgbench threads (`-j`): a number, or `auto` (default) = min(clients, CPUs)."},
					"protocol": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "`simple` (default), `extended` or `prepared`.",
						Validators:          []validator.String{stringvalidator.OneOf("simple", "extended", "prepared")}},
					"warmup": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "Unrecorded pgbench run before each measured run, e.g. `10s`; default none."},
					"checkpoint_before": schema.BoolAttribute{Optional: true,
						PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
						MarkdownDescription: "Run CHECKPOINT before each measured run."},
					"restart": schema.StringAttribute{Optional: true, PlanModifiers: rs,
						MarkdownDescription: "When servers restart: `never` (default, only to switch variants), `cell` or `run`.",
						Validators:          []validator.String{stringvalidator.OneOf("never", "cell", "run")}},
				},
			},
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (r *abBenchmarkResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

var abVariantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (r *abBenchmarkResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m abBenchmarkModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateABModel(ctx, &m, &resp.Diagnostics)
	validateABPlacement(&m, &resp.Diagnostics)
}

// validateABModel checks at plan time everything the runner would refuse,
// so a mistake costs a plan, not a campaign. Unknown values are skipped.
func validateABModel(ctx context.Context, m *abBenchmarkModel, d *diag.Diagnostics) {
	vp := path.Root("variant")
	if m.Variants.IsUnknown() {
		return
	}
	variants, diags := m.variants(ctx)
	d.Append(diags...)
	if diags.HasError() {
		return
	}
	{
		switch len(variants) {
		case 0:
			d.AddAttributeError(vp, "No Variants", "An A/B campaign needs at least two variant blocks (the first is the baseline); found none. Add a variant block per build or setting to compare.")
		case 1:
			d.AddAttributeError(vp, "Only One Variant", fmt.Sprintf("An A/B campaign needs at least two variant blocks (the first is the baseline); found one (%s). Add the variant to compare it with.", variants[0].Name.ValueString()))
		}
	}
	seen := map[string]int{}
	for i, v := range variants {
		p := vp.AtListIndex(i)
		if name := v.Name; !name.IsNull() && !name.IsUnknown() {
			n := name.ValueString()
			if !abVariantName.MatchString(n) {
				d.AddAttributeError(p.AtName("name"), "Invalid Variant Name", fmt.Sprintf("Variant name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit.", n))
			}
			if j, dup := seen[n]; dup {
				d.AddAttributeError(p.AtName("name"), "Duplicate Variant Name", fmt.Sprintf("Variant name %q is used by variant %d and variant %d; each variant needs its own name.", n, j, i))
			}
			seen[n] = i
		}
		if b := v.BinDir; !b.IsNull() && !b.IsUnknown() && strings.ContainsAny(b.ValueString(), ",;") {
			d.AddAttributeError(p.AtName("bin_dir"), "Invalid Bin Dir", fmt.Sprintf("bin_dir is %q; a directory with ',' or ';' in its name cannot be passed to the runner's --variant. Install or link the build elsewhere.", b.ValueString()))
		}
		if hp := v.HugePages; !hp.IsNull() && !hp.IsUnknown() {
			switch hp.ValueString() {
			case "on", "off", "try":
			default:
				d.AddAttributeError(p.AtName("huge_pages"), "Invalid Huge Pages Setting", fmt.Sprintf("huge_pages is %q; want on, off or try.", hp.ValueString()))
			}
		}
		if !v.Settings.IsNull() && !v.Settings.IsUnknown() {
			var s map[string]types.String
			d.Append(v.Settings.ElementsAs(ctx, &s, false)...)
			for k, val := range s {
				if k == "huge_pages" {
					d.AddAttributeError(p.AtName("settings"), "Huge Pages In Settings", "Set huge pages with the variant's huge_pages argument (on, off or try), not in settings, so the runner can check the server really used them.")
				}
				if strings.ContainsAny(k, ",;=") || strings.ContainsAny(val.ValueString(), ",;") {
					d.AddAttributeError(p.AtName("settings").AtMapKey(k), "Invalid Variant Setting", fmt.Sprintf("Setting %s = %q: a variant's setting names may not contain ',', ';' or '=' and values may not contain ',' or ';'. Put such a setting in the shared settings instead.", k, val.ValueString()))
				}
			}
		}
	}
	if !m.Settings.IsNull() && !m.Settings.IsUnknown() {
		var s map[string]types.String
		d.Append(m.Settings.ElementsAs(ctx, &s, false)...)
		if _, ok := s["huge_pages"]; ok {
			d.AddAttributeError(path.Root("settings").AtMapKey("huge_pages"), "Huge Pages In Settings", "huge_pages is per variant: set the variant's huge_pages argument (on, off or try) instead.")
		}
	}

	wp := path.Root("workload")
	w := m.Workload
	if w == nil {
		d.AddAttributeError(wp, "Missing Workload", "A workload block is required, with at least clients, e.g. workload { mode = \"select-only\" clients = [1, 16] }.")
		return
	}
	if mode := w.Mode; !mode.IsNull() && !mode.IsUnknown() {
		switch mode.ValueString() {
		case "select-only", "tpcb", "simple-update":
		case "custom":
			if w.Script.IsNull() {
				d.AddAttributeError(wp.AtName("script"), "Missing Script", "mode = \"custom\" needs script, the path on the host of the pgbench script to run.")
			}
		default:
			d.AddAttributeError(wp.AtName("mode"), "Unknown Workload Mode", fmt.Sprintf("mode is %q; want select-only, tpcb, simple-update or custom.", mode.ValueString()))
		}
	}
	if !w.Clients.IsUnknown() {
		var clients []types.Int64
		if !w.Clients.IsNull() {
			d.Append(w.Clients.ElementsAs(ctx, &clients, false)...)
		}
		if len(clients) == 0 {
			d.AddAttributeError(wp.AtName("clients"), "No Client Counts", "clients is empty; give one or more client counts, e.g. clients = [1, 16, 64].")
		}
		firstAt := map[int64]int{}
		for i, c := range clients {
			if c.IsNull() || c.IsUnknown() {
				continue
			}
			if c.ValueInt64() < 1 {
				d.AddAttributeError(wp.AtName("clients").AtListIndex(i), "Invalid Client Count", fmt.Sprintf("clients[%d] is %d; every client count must be a positive integer.", i, c.ValueInt64()))
			}
			if j, dup := firstAt[c.ValueInt64()]; dup {
				d.AddAttributeError(wp.AtName("clients").AtListIndex(i), "Duplicate Client Count", fmt.Sprintf("clients[%d] and clients[%d] are both %d; list each client count once and raise iterations for more runs.", j, i, c.ValueInt64()))
			} else {
				firstAt[c.ValueInt64()] = i
			}
		}
	}
	if it := w.Iterations; !it.IsNull() && !it.IsUnknown() && it.ValueInt64() < 1 {
		d.AddAttributeError(wp.AtName("iterations"), "Invalid Iterations", fmt.Sprintf("iterations is %d; it must be at least 1 (4 or more for a verdict that can reach significance at alpha 0.05).", it.ValueInt64()))
	} else if !it.IsNull() && !it.IsUnknown() && it.ValueInt64() < 4 {
		d.AddAttributeWarning(wp.AtName("iterations"), "Too Few Iterations For A Verdict", fmt.Sprintf("With %d iterations per variant no difference can reach significance at alpha 0.05 (3 against 3 gives p >= 0.1 at best): every verdict will be no-difference. Use 5 or more.", it.ValueInt64()))
	}
	if sc := w.Script; !sc.IsNull() && !sc.IsUnknown() && !w.Mode.IsUnknown() && w.Mode.ValueString() != "custom" {
		d.AddAttributeError(wp.AtName("script"), "Script Without Custom Mode", fmt.Sprintf("script is set but mode is %q; set mode = \"custom\" to run the script, or remove script.", w.Mode.ValueString()))
	}
	checkDuration := func(name string, v types.String, positive bool) {
		if v.IsNull() || v.IsUnknown() {
			return
		}
		dur, err := time.ParseDuration(v.ValueString())
		switch {
		case err != nil:
			d.AddAttributeError(wp.AtName(name), "Invalid Duration", fmt.Sprintf("%s is %q, which is not a duration; write it like 60s, 90s or 2m.", name, v.ValueString()))
		case positive && dur <= 0, dur < 0:
			d.AddAttributeError(wp.AtName(name), "Invalid Duration", fmt.Sprintf("%s is %q; it must be more than zero.", name, v.ValueString()))
		case dur%time.Second != 0:
			d.AddAttributeError(wp.AtName(name), "Invalid Duration", fmt.Sprintf("%s is %q; pgbench runs whole seconds, so use e.g. %ds.", name, v.ValueString(), int(dur.Seconds()+0.5)))
		}
	}
	checkDuration("duration", w.Duration, true)
	checkDuration("warmup", w.Warmup, false)
	if th := w.Threads; !th.IsNull() && !th.IsUnknown() && th.ValueString() != "auto" {
		if n, err := strconv.Atoi(th.ValueString()); err != nil || n < 1 {
			d.AddAttributeError(wp.AtName("threads"), "Invalid Threads", fmt.Sprintf("threads is %q; want a positive number or auto.", th.ValueString()))
		}
	}
}

// validateABPlacement checks the pinning specs and the seed, which the
// runner would otherwise refuse only after connecting to the host.
func validateABPlacement(m *abBenchmarkModel, d *diag.Diagnostics) {
	for name, v := range map[string]types.String{"server_numa": m.ServerNUMA, "client_numa": m.ClientNUMA} {
		if v.IsNull() || v.IsUnknown() {
			continue
		}
		if _, err := campaign.ParseNUMA(v.ValueString()); err != nil {
			d.AddAttributeError(path.Root(name), "Invalid NUMA Pinning", fmt.Sprintf("%s is %q: %v. Write it like cpunodebind=0 or cpunodebind=0,membind=0.", name, v.ValueString(), err))
		}
	}
	if !m.Seed.IsNull() && !m.Seed.IsUnknown() && !m.Order.IsUnknown() && m.Order.ValueString() != "randomized" {
		d.AddAttributeError(path.Root("seed"), "Seed Without Randomized Order", "seed only applies to order = \"randomized\"; set that order or remove seed.")
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

	args, err := abArgs(ctx, &plan)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Campaign", err.Error())
		return
	}
	conn, ex, ok := dialHost(ctx, plan.Connection, "the A/B campaign", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	key := abCampaignKey(args)
	dir := abCampaignDir(conn.RunnerPath.ValueString(), key)

	// State is saved only when the campaign finished. A failed or
	// interrupted Create leaves nothing in state, so the next apply calls
	// Create again with the same arguments and the same directory, and the
	// runner resumes from its journal instead of Terraform tainting the
	// resource and throwing the finished runs away.
	full := append([]string{"ab", "--out", dir}, args...)
	full = append(full, "--progress-json")
	tflog.Info(ctx, "starting A/B campaign", map[string]any{"report_dir": dir, "command": strings.Join(full, " ")})
	prog := &abProgress{ctx: ctx}
	var res report.Results
	// On cancel the runner stops pgbench and the server and keeps its
	// journal; a server killed mid-shutdown would keep its huge pages.
	err = runRunnerCommand(ctx, ex, conn.RunnerPath.ValueString(), &res,
		remote.Command{OnStderr: prog.line, KillGrace: abStopGrace}, full...)
	for _, w := range prog.warnings {
		resp.Diagnostics.AddWarning("Campaign Warning", w)
	}
	if err != nil {
		detail := fmt.Sprintf("The campaign in %s on the host failed: %v.", dir, err)
		var re *runnerError
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
	if err := checkResults(&res); err != nil {
		resp.Diagnostics.AddError("Unreadable Campaign Results", fmt.Sprintf("%v (in %s/results.json).", err, dir))
		return
	}

	// The same renderer as the runner's summary.md, so no second round trip.
	var summary strings.Builder
	if err := report.WriteMarkdown(&summary, &res); err != nil {
		resp.Diagnostics.AddError("Unreadable Campaign Results", fmt.Sprintf("Render the summary of %s: %v.", dir, err))
		return
	}

	plan.ID = types.StringValue(key)
	plan.ReportDir = types.StringValue(dir)
	plan.SummaryMarkdown = types.StringValue(summary.String())
	resp.Diagnostics.Append(plan.setResults(ctx, &res)...)
	if resp.Diagnostics.HasError() {
		return
	}
	logABSummary(ctx, &res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
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
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update only sees changes of timeouts: every other argument forces a new
// campaign.
func (r *abBenchmarkResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state abBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.Timeouts = plan.Timeouts
	state.HourlyPriceUSD = plan.HourlyPriceUSD
	state.CostUSD = abCostUSD(state.HourlyPriceUSD, state.WallSeconds)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
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
	var out struct {
		Removed []string `json:"removed"`
	}
	if err := runRunner(ctx, ex, conn.RunnerPath.ValueString(), &out, nil, "ab", "--out", dir, "--remove-data"); err != nil {
		resp.Diagnostics.AddError("Campaign Data Not Removed", fmt.Sprintf("Remove the data directories of the campaign in %s: %v.", dir, err))
		return
	}
	// Move the reports aside: a later campaign with the same configuration
	// must measure again, not find this finished journal and resume it.
	now := time.Now
	if r.data != nil && r.data.now != nil {
		now = r.data.now
	}
	kept := dir + ".destroyed-" + now().UTC().Format("20060102T150405Z")
	if _, err := ex.Run(ctx, remote.Command{Args: []string{"mv", "-T", dir, kept}}); err != nil {
		resp.Diagnostics.AddWarning("Campaign Reports Not Moved", fmt.Sprintf("The data directories are removed, but moving %s to %s failed: %v. "+
			"Applying the same configuration again would find the finished journal there and reuse its results; delete or move it by hand.", dir, kept, err))
		return
	}
	tflog.Info(ctx, "removed campaign data directories", map[string]any{"report_dir": dir, "reports_kept_in": kept, "removed": out.Removed})
}

// abArgs is the `pgbench-runner ab` command line of the campaign, without
// --out and the reporting flags. Maps are rendered in sorted order, so the
// same configuration always gives the same arguments and so the same
// campaign directory, which is what lets a failed apply resume.
func abArgs(ctx context.Context, m *abBenchmarkModel) ([]string, error) {
	var args []string
	variants, diags := m.variants(ctx)
	if diags.HasError() {
		return nil, fmt.Errorf("variants: %v", diags)
	}
	for _, v := range variants {
		spec := "name=" + v.Name.ValueString() + ",bin=" + v.BinDir.ValueString()
		var s map[string]string
		if !v.Settings.IsNull() {
			if d := v.Settings.ElementsAs(ctx, &s, false); d.HasError() {
				return nil, fmt.Errorf("variant %s settings: %v", v.Name.ValueString(), d)
			}
		}
		if len(s) > 0 {
			kv := make([]string, 0, len(s))
			for _, k := range sortedKeys(s) {
				kv = append(kv, k+"="+s[k])
			}
			spec += ",set=" + strings.Join(kv, ";")
		}
		if !v.HugePages.IsNull() {
			spec += ",huge_pages=" + v.HugePages.ValueString()
		}
		args = append(args, "--variant", spec)
	}
	if !m.Settings.IsNull() {
		var s map[string]string
		if d := m.Settings.ElementsAs(ctx, &s, false); d.HasError() {
			return nil, fmt.Errorf("settings: %v", d)
		}
		for _, k := range sortedKeys(s) {
			args = append(args, "--set", k+"="+s[k])
		}
	}
	str := func(flag string, v types.String) {
		if !v.IsNull() {
			args = append(args, flag, v.ValueString())
		}
	}
	if w := m.Workload; w != nil {
		str("--mode", w.Mode)
		str("--script", w.Script)
		if !w.Scale.IsNull() {
			args = append(args, "--scale", strconv.FormatInt(w.Scale.ValueInt64(), 10))
		}
		var clients []int64
		if d := w.Clients.ElementsAs(ctx, &clients, false); d.HasError() {
			return nil, fmt.Errorf("clients: %v", d)
		}
		cs := make([]string, len(clients))
		for i, c := range clients {
			cs[i] = strconv.FormatInt(c, 10)
		}
		args = append(args, "--clients", strings.Join(cs, ","))
		str("--threads", w.Threads)
		str("--duration", w.Duration)
		if !w.Iterations.IsNull() {
			args = append(args, "--iterations", strconv.FormatInt(w.Iterations.ValueInt64(), 10))
		}
		str("--protocol", w.Protocol)
		str("--warmup", w.Warmup)
		if w.CheckpointBefore.ValueBool() {
			args = append(args, "--checkpoint-before")
		}
		str("--restart", w.Restart)
	}
	str("--server-numa", m.ServerNUMA)
	str("--client-numa", m.ClientNUMA)
	str("--order", m.Order)
	if !m.Alpha.IsNull() {
		args = append(args, "--alpha", strconv.FormatFloat(m.Alpha.ValueFloat64(), 'g', -1, 64))
	}
	switch {
	case !m.Seed.IsNull():
		args = append(args, "--seed", strconv.FormatInt(m.Seed.ValueInt64(), 10))
	case m.Order.ValueString() == "randomized":
		// A clock seed would give a different order, and a journal the
		// runner refuses, each time a failed apply is retried.
		sum := sha256.Sum256([]byte(strings.Join(args, "\x00")))
		seed := int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
		args = append(args, "--seed", strconv.FormatInt(seed, 10))
	}
	return args, nil
}

// abCampaignKey names a campaign by its definition.
func abCampaignKey(args []string) string {
	sum := sha256.Sum256([]byte(strings.Join(args, "\x00")))
	return hex.EncodeToString(sum[:])[:16]
}

// abCampaignDir is the campaign's directory on the host, next to the runner
// that pgbench_host installed (and removes).
func abCampaignDir(runnerPath, key string) string {
	return posixpath.Join(posixpath.Dir(runnerPath), "campaigns", key)
}

// abProgress forwards the runner's --progress-json events to the Terraform
// log while the campaign runs (visible with TF_LOG=INFO).
type abProgress struct {
	ctx      context.Context
	warnings []string
}

func (p *abProgress) line(l string) {
	var e struct {
		Event          string   `json:"event"`
		Message        string   `json:"message"`
		Seq            int      `json:"seq"`
		Total          int      `json:"total"`
		Variant        string   `json:"variant"`
		Clients        int      `json:"clients"`
		Iteration      int      `json:"iteration"`
		TPS            *float64 `json:"tps"`
		Seconds        *float64 `json:"seconds"`
		ElapsedSeconds *float64 `json:"elapsed_seconds"`
		ETASeconds     *float64 `json:"eta_seconds"`
		WallSeconds    *float64 `json:"wall_seconds"`
	}
	if !strings.HasPrefix(strings.TrimSpace(l), "{") || json.Unmarshal([]byte(l), &e) != nil || e.Event == "" {
		tflog.Debug(p.ctx, "pgbench-runner: "+l)
		return
	}
	f := func(v *float64) float64 {
		if v == nil {
			return 0
		}
		return *v
	}
	fields := map[string]any{"seq": e.Seq, "total": e.Total, "variant": e.Variant, "clients": e.Clients, "iteration": e.Iteration}
	switch e.Event {
	case "phase":
		tflog.Info(p.ctx, "campaign: "+e.Message)
	case "warning":
		tflog.Warn(p.ctx, "campaign warning: "+e.Message)
		p.warnings = append(p.warnings, e.Message)
	case "run_start":
		tflog.Debug(p.ctx, fmt.Sprintf("run %d/%d started: %s, %d clients, iteration %d", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration), fields)
	case "run_skipped":
		fields["tps"] = f(e.TPS)
		tflog.Info(p.ctx, fmt.Sprintf("run %d/%d: %s, %d clients, iteration %d: in the journal (%.1f tps)", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration, f(e.TPS)), fields)
	case "run_done":
		fields["tps"], fields["seconds"], fields["elapsed_seconds"], fields["eta_seconds"] = f(e.TPS), f(e.Seconds), f(e.ElapsedSeconds), f(e.ETASeconds)
		tflog.Info(p.ctx, fmt.Sprintf("run %d/%d: %s, %d clients, iteration %d: %.1f tps in %.1fs, elapsed %s, ETA %s",
			e.Seq, e.Total, e.Variant, e.Clients, e.Iteration, f(e.TPS), f(e.Seconds), secs(f(e.ElapsedSeconds)), secs(f(e.ETASeconds))), fields)
	case "done":
		tflog.Info(p.ctx, fmt.Sprintf("campaign done in %s", secs(f(e.WallSeconds))))
	default:
		tflog.Debug(p.ctx, "pgbench-runner: "+l)
	}
}

func secs(s float64) string { return (time.Duration(s+0.5) * time.Second).String() }

// logABSummary logs one line per comparison when the campaign is done.
func logABSummary(ctx context.Context, res *report.Results) {
	for _, c := range res.Cells {
		for _, cmp := range c.Comparisons {
			tflog.Info(ctx, fmt.Sprintf("%d clients: %s vs %s: %+.2f%% (p=%.3f): %s", c.Clients, cmp.Candidate, cmp.Baseline, cmp.DeltaPct, cmp.PValue, cmp.Verdict),
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
	ID                types.String     `tfsdk:"id"`
	Connection        types.Object     `tfsdk:"host_connection"`
	Variants          types.List       `tfsdk:"variant"`
	Settings          types.Map        `tfsdk:"settings"`
	Workload          *abWorkloadModel `tfsdk:"workload"`
	ServerNUMA        types.String     `tfsdk:"server_numa"`
	ClientNUMA        types.String     `tfsdk:"client_numa"`
	Order             types.String     `tfsdk:"order"`
	Seed              types.Int64      `tfsdk:"seed"`
	Alpha             types.Float64    `tfsdk:"alpha"`
	Results           types.List       `tfsdk:"results"`
	SummaryMarkdown   types.String     `tfsdk:"summary_markdown"`
	ReportDir         types.String     `tfsdk:"report_dir"`
	StartedAt         types.String     `tfsdk:"started_at"`
	FinishedAt        types.String     `tfsdk:"finished_at"`
	WallSeconds       types.Float64    `tfsdk:"wall_seconds"`
	HourlyPriceUSD    types.Float64    `tfsdk:"hourly_price_usd"`
	CostUSD           types.Float64    `tfsdk:"cost_usd"`
	Sysinfo           types.String     `tfsdk:"sysinfo"`
	HugePagesObserved types.Map        `tfsdk:"huge_pages_observed"`
	Warnings          types.List       `tfsdk:"warnings"`
	Timeouts          timeouts.Value   `tfsdk:"timeouts"`
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

type abWorkloadModel struct {
	Mode             types.String `tfsdk:"mode"`
	Script           types.String `tfsdk:"script"`
	Scale            types.Int64  `tfsdk:"scale"`
	Clients          types.List   `tfsdk:"clients"`
	Duration         types.String `tfsdk:"duration"`
	Iterations       types.Int64  `tfsdk:"iterations"`
	Threads          types.String `tfsdk:"threads"`
	Protocol         types.String `tfsdk:"protocol"`
	Warmup           types.String `tfsdk:"warmup"`
	CheckpointBefore types.Bool   `tfsdk:"checkpoint_before"`
	Restart          types.String `tfsdk:"restart"`
}
