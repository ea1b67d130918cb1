package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	posixpath "path"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
)

var (
	_ resource.ResourceWithConfigure        = (*hugepagePoolResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*hugepagePoolResource)(nil)
	_ resource.ResourceWithConfigValidators = (*hugepagePoolResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*hugepagePoolResource)(nil)
)

// NewHugepagePoolResource is the constructor of pgbench_hugepage_pool.
func NewHugepagePoolResource() resource.Resource { return &hugepagePoolResource{} }

type hugepagePoolResource struct {
	data *providerData
}

// privateReserved is the private-state key holding the page count the kernel
// gave at create time, which Read's live count is compared against.
const privateReserved = "reserved_pages"

// maxPoolFraction is the largest share of memory a pool may take, the same
// bound memory_fraction has: the rest is needed by the kernel, the page cache
// and the pgbench clients.
const maxPoolFraction = 0.9

// Growing a pool drops caches and compacts memory first, which takes
// minutes on a host with hundreds of gigabytes; releasing is quicker.
const (
	poolDefaultCreateTimeout = 20 * time.Minute
	poolDefaultDeleteTimeout = 10 * time.Minute
)

func (r *hugepagePoolResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_hugepage_pool"
}

func (r *hugepagePoolResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	keepInt := []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A reserved huge-page pool on a host (`vm.nr_hugepages`, or one NUMA node's pool). " +
			"The pool is grown the safe way (caches dropped and memory compacted first), read back, and put back " +
			"on a shortfall. Destroy restores the size it had before. A pool that shrank outside Terraform is " +
			"planned for replacement. Set exactly one of `pages`, `memory_fraction` or `size_for`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Identifier of the reservation.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host_connection": connectionInputAttribute(),
			"pages": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Number of huge pages to reserve.",
				PlanModifiers:       replaceInt,
			},
			"memory_fraction": schema.Float64Attribute{
				Optional:            true,
				MarkdownDescription: "Reserve this fraction of the host's memory, in (0, 0.9]; the runbook uses 0.25.",
				PlanModifiers:       []planmodifier.Float64{float64planmodifier.RequiresReplace()},
			},
			"page_size": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("2MB"),
				MarkdownDescription: "Huge page size: `2MB` (default) or `1GB`.",
				Validators:          []validator.String{stringvalidator.OneOf("2MB", "1GB")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"numa_node": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Reserve on this NUMA node only; by default the global pool.",
				PlanModifiers:       replaceInt,
			},
			"persist": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Also write `vm.nr_hugepages` to `/etc/sysctl.d` so the pool is reserved at boot " +
					"(global 2MB pool only). Destroy removes it again.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"overcommit": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Set `vm.overcommit_memory=2` with `vm.overcommit_ratio=90`, as the runbook does; " +
					"destroy restores both.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"pages_total": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Pages the pool holds, as read back from the kernel.",
				PlanModifiers:       keepInt,
			},
			"bytes": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Size of the pool in bytes.",
				PlanModifiers:       keepInt,
			},
			"previous_pages": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Size of the pool before this resource changed it; destroy restores it.",
				PlanModifiers:       keepInt,
			},
			"shared_memory_size_bytes": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "With `size_for`: PostgreSQL's own `shared_memory_size` for those settings; otherwise 0.",
				PlanModifiers:       keepInt,
			},
			"state_file": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "File on the host recording what the reservation changed, used to undo it.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true,
				CreateDescription: fmt.Sprintf("How long sizing and reserving the pool may take, a duration such as `30m` (default %s): "+
					"growing a pool on a host with hundreds of gigabytes compacts memory first.", poolDefaultCreateTimeout),
				DeleteDescription: fmt.Sprintf("How long restoring the previous pool size may take (default %s).", poolDefaultDeleteTimeout)}),
			"size_for": schema.SingleNestedBlock{
				MarkdownDescription: "Size the pool for a PostgreSQL configuration: the server is asked for its " +
					"`shared_memory_size_in_huge_pages` with these settings (the two-pass sizing of the runbook).",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"bin_dir": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "PostgreSQL bin directory, e.g. `pgbench_postgres_build.x.bin_dir`. Required in the block.",
					},
					"settings": schema.MapAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "postgresql.conf settings, e.g. `{ shared_buffers = \"8GB\" }`.",
					},
				},
			},
		},
	}
}

func (r *hugepagePoolResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// ConfigValidators sizes the pool one way only.
func (r *hugepagePoolResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{exactlyOneOf{title: "Invalid Pool Size", names: "pages, memory_fraction or a size_for block",
		paths: []path.Path{path.Root("pages"), path.Root("memory_fraction"), path.Root("size_for")}}}
}

func (r *hugepagePoolResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m hugepagePoolModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !m.Pages.IsNull() && !m.Pages.IsUnknown() && m.Pages.ValueInt64() < 1 {
		resp.Diagnostics.AddAttributeError(path.Root("pages"), "Invalid Page Count",
			fmt.Sprintf("pages is %d; it must be at least 1.", m.Pages.ValueInt64()))
	}
	if !m.MemoryFraction.IsNull() && !m.MemoryFraction.IsUnknown() {
		if f := m.MemoryFraction.ValueFloat64(); !(f > 0 && f <= 0.9) {
			resp.Diagnostics.AddAttributeError(path.Root("memory_fraction"), "Invalid Memory Fraction",
				fmt.Sprintf("memory_fraction is %v; it must be greater than 0 and at most 0.9 "+
					"(the rest of memory must stay for the page cache and the clients; the runbook uses 0.25).", f))
		}
	}
	if m.SizeFor != nil && m.SizeFor.BinDir.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("size_for").AtName("bin_dir"), "Missing PostgreSQL Bin Directory",
			"size_for needs bin_dir, the PostgreSQL bin directory whose server is asked for its shared memory size.")
	}
	if !m.NumaNode.IsNull() && !m.NumaNode.IsUnknown() && m.NumaNode.ValueInt64() < 0 {
		resp.Diagnostics.AddAttributeError(path.Root("numa_node"), "Invalid NUMA Node",
			fmt.Sprintf("numa_node is %d; NUMA nodes are numbered from 0.", m.NumaNode.ValueInt64()))
	}
}

// ModifyPlan turns a pool that shrank outside Terraform (Read recorded the
// live count in pages_total) into a replacement, so apply reserves it again.
func (r *hugepagePoolResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return
	}
	var st hugepagePoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &st)...)
	if resp.Diagnostics.HasError() {
		return
	}
	reserved, ok := privateReservedPages(ctx, req.Private)
	if !ok || st.PagesTotal.IsNull() || st.PagesTotal.ValueInt64() >= reserved {
		return
	}
	resp.Diagnostics.AddWarning("Huge Page Pool Shrank",
		fmt.Sprintf("The pool holds %d pages now, but %d were reserved. It is planned for replacement, which "+
			"releases it and reserves it again.", st.PagesTotal.ValueInt64(), reserved))
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("pages_total"), types.Int64Unknown())...)
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("pages_total"))
}

func (r *hugepagePoolResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m hugepagePoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, done, ok := timeoutContext(ctx, "create", m.Timeouts.Create, poolDefaultCreateTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer done()
	conn, ex, ok := dialHost(ctx, m.Connection, "reserving the huge page pool", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	rc := conn.runner(ex)
	rc.OnStderr = func(line string) { tflog.Info(ctx, line) }

	// Size the pool first, so the reservation is a plain page count.
	var plan hugepages.Plan
	if err := rc.Run(ctx, &plan, m.planArgs(ctx, &resp.Diagnostics)...); err != nil {
		resp.Diagnostics.AddError("Huge Page Sizing Failed", fmt.Sprintf("Sizing the pool on %s failed: %v", ex, err))
		return
	}
	if plan.Pages < 1 {
		resp.Diagnostics.AddError("Huge Page Sizing Failed",
			fmt.Sprintf("The sizing on %s gave %d pages of %s; ask for a larger pages, memory_fraction or shared_buffers.",
				ex, plan.Pages, m.PageSize.ValueString()))
		return
	}

	// Growing the pool towards all of memory drops the page cache and
	// starves every process on the host before the shortfall is noticed;
	// refuse what cannot be right before touching the pool.
	if memTotal := plan.Bytes + plan.RemainingBytes; float64(plan.Bytes) > maxPoolFraction*float64(memTotal) {
		resp.Diagnostics.AddError("Huge Page Reservation Failed",
			fmt.Sprintf("Asked %s for %d pages of %s (%d bytes), but the host has %d bytes of memory and the pool may "+
				"take at most %.0f%% of it. The pool was not changed. Ask for fewer pages or a smaller shared_buffers.",
				ex, plan.Pages, m.PageSize.ValueString(), plan.Bytes, memTotal, maxPoolFraction*100))
		return
	}

	id, err := randomID()
	if err != nil {
		resp.Diagnostics.AddError("Huge Page Reservation Failed", err.Error())
		return
	}
	stateFile := posixpath.Join(posixpath.Dir(rc.Path), "hugepage-state-"+id+".json")
	args := []string{"hugepages", "reserve", "--pages", strconv.FormatInt(plan.Pages, 10),
		"--page-size", m.PageSize.ValueString(), "--state", stateFile}
	if !m.NumaNode.IsNull() {
		args = append(args, "--node", strconv.FormatInt(m.NumaNode.ValueInt64(), 10))
	}
	if m.Persist.ValueBool() {
		args = append(args, "--persist")
	}
	if m.Overcommit.ValueBool() {
		args = append(args, "--overcommit")
	}
	tflog.Info(ctx, "reserving huge pages", map[string]any{"pages": plan.Pages, "page_size": m.PageSize.ValueString()})
	var res hugepages.Reserved
	if err := rc.Run(ctx, &res, args...); err != nil {
		resp.Diagnostics.AddError("Huge Page Reservation Failed",
			fmt.Sprintf("Asked %s for %d pages of %s (%d bytes): %v\n\nThe runner put the pool back as it was. "+
				"Ask for fewer pages, reserve the pool before memory fills up (or at boot), or free memory on the host.",
				ex, plan.Pages, m.PageSize.ValueString(), plan.Pages*plan.PageSizeBytes, err))
		return
	}

	m.ID = types.StringValue(id)
	m.StateFile = types.StringValue(stateFile)
	m.PagesTotal = types.Int64Value(res.Total)
	m.Bytes = types.Int64Value(res.Total * res.PageSizeBytes)
	m.PreviousPages = types.Int64Value(res.Previous)
	m.SharedMemorySizeBytes = types.Int64Value(plan.SharedMemorySizeBytes)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	b, _ := json.Marshal(res.Total)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateReserved, b)...)
}

func (r *hugepagePoolResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m hugepagePoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	conn, ex, ok := dialHost(ctx, m.Connection, "reading the huge page pool", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	var st struct {
		Pools []struct {
			SizeBytes int64 `json:"size_bytes"`
			Total     int64 `json:"total"`
		} `json:"hugepages"`
		Nodes []struct {
			ID    int64 `json:"id"`
			Pools []struct {
				SizeBytes int64 `json:"size_bytes"`
				Total     int64 `json:"total"`
			} `json:"hugepages"`
		} `json:"numa_nodes"`
	}
	if err := conn.runner(ex).Run(ctx, &st, "hugepages", "status"); err != nil {
		resp.Diagnostics.AddError("Huge Page Status Failed", fmt.Sprintf("Reading the pool on %s failed: %v", ex, err))
		return
	}
	size, err := hugepages.ParsePageSize(m.PageSize.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("page_size"), "Invalid Page Size", err.Error())
		return
	}
	// A page size the host no longer lists is an empty pool.
	live := int64(0)
	if m.NumaNode.IsNull() {
		for _, p := range st.Pools {
			if p.SizeBytes == size {
				live = p.Total
			}
		}
	} else {
		for _, n := range st.Nodes {
			if n.ID != m.NumaNode.ValueInt64() {
				continue
			}
			for _, p := range n.Pools {
				if p.SizeBytes == size {
					live = p.Total
				}
			}
		}
	}
	if reserved, ok := privateReservedPages(ctx, req.Private); ok && live < reserved {
		tflog.Warn(ctx, "huge page pool shrank", map[string]any{"live": live, "reserved": reserved})
		m.PagesTotal = types.Int64Value(live)
		m.Bytes = types.Int64Value(live * size)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *hugepagePoolResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	// Every input but the connection and the timeouts forces replacement:
	// a new way to the same host is stored, the pool is left as it is.
	var plan, state hugepagePoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.Connection = plan.Connection
	state.Timeouts = plan.Timeouts
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *hugepagePoolResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m hugepagePoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, done, ok := timeoutContext(ctx, "delete", m.Timeouts.Delete, poolDefaultDeleteTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer done()
	conn, ex, ok := dialHost(ctx, m.Connection, "releasing the huge page pool", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	var res hugepages.Reserved
	rc := conn.runner(ex)
	rc.OnStderr = func(l string) { tflog.Info(ctx, l) }
	err := rc.Run(ctx, &res, "hugepages", "release", "--state", m.StateFile.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Huge Page Release Failed",
			fmt.Sprintf("Restoring the pool on %s to %d pages failed: %v\n\nStop whatever still maps huge pages "+
				"(a PostgreSQL server) and destroy again.", ex, m.PreviousPages.ValueInt64(), err))
		return
	}
	if res.NoState {
		tflog.Warn(ctx, "no huge page state file on the host; nothing to restore", map[string]any{"state_file": m.StateFile.ValueString()})
	}
}

// planArgs is the runner's command line that sizes the pool.
func (m *hugepagePoolModel) planArgs(ctx context.Context, d *diag.Diagnostics) []string {
	args := []string{"hugepages", "plan", "--page-size", m.PageSize.ValueString()}
	switch {
	case !m.Pages.IsNull():
		return append(args, "--pages", strconv.FormatInt(m.Pages.ValueInt64(), 10))
	case !m.MemoryFraction.IsNull():
		return append(args, "--memory-fraction", strconv.FormatFloat(m.MemoryFraction.ValueFloat64(), 'g', -1, 64))
	}
	args = append(args, "--for-postgres", m.SizeFor.BinDir.ValueString())
	settings := map[string]string{}
	d.Append(m.SizeFor.Settings.ElementsAs(ctx, &settings, false)...)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--set", k+"="+settings[k])
	}
	return args
}

// privateState is the part of the framework's private state data used here.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// privateReservedPages reads the page count Create recorded.
func privateReservedPages(ctx context.Context, p privateState) (int64, bool) {
	b, diags := p.GetKey(ctx, privateReserved)
	if diags.HasError() || len(b) == 0 {
		return 0, false
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, false
	}
	return n, true
}

func randomID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make reservation id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

type hugepagePoolModel struct {
	ID                    types.String   `tfsdk:"id"`
	Connection            types.Object   `tfsdk:"host_connection"`
	Pages                 types.Int64    `tfsdk:"pages"`
	MemoryFraction        types.Float64  `tfsdk:"memory_fraction"`
	SizeFor               *sizeForModel  `tfsdk:"size_for"`
	PageSize              types.String   `tfsdk:"page_size"`
	NumaNode              types.Int64    `tfsdk:"numa_node"`
	Persist               types.Bool     `tfsdk:"persist"`
	Overcommit            types.Bool     `tfsdk:"overcommit"`
	PagesTotal            types.Int64    `tfsdk:"pages_total"`
	Bytes                 types.Int64    `tfsdk:"bytes"`
	PreviousPages         types.Int64    `tfsdk:"previous_pages"`
	SharedMemorySizeBytes types.Int64    `tfsdk:"shared_memory_size_bytes"`
	StateFile             types.String   `tfsdk:"state_file"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

type sizeForModel struct {
	BinDir   types.String `tfsdk:"bin_dir"`
	Settings types.Map    `tfsdk:"settings"`
}
