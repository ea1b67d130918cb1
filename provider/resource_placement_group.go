package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
)

var (
	_ resource.ResourceWithConfigure   = (*placementGroupResource)(nil)
	_ resource.ResourceWithImportState = (*placementGroupResource)(nil)
)

// placementGroupDeleteTimeout bounds how long a destroy waits for the
// instances of the group to finish terminating.
const placementGroupDeleteTimeout = 10 * time.Minute

// NewPlacementGroupResource returns the pgbench_placement_group resource.
func NewPlacementGroupResource() resource.Resource { return &placementGroupResource{} }

// placementGroupResource is an EC2 placement group, so that a server host
// and its client host can share a cluster group without another provider.
type placementGroupResource struct {
	data *providerData
}

type placementGroupModel struct {
	ID               types.String `tfsdk:"id"`
	Name             types.String `tfsdk:"name"`
	Strategy         types.String `tfsdk:"strategy"`
	Region           types.String `tfsdk:"region"`
	Tags             types.Map    `tfsdk:"tags"`
	PollInterval     types.String `tfsdk:"poll_interval"`
	PlacementGroupID types.String `tfsdk:"placement_group_id"`
	ARN              types.String `tfsdk:"arn"`
}

func (r *placementGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_placement_group"
}

func (r *placementGroupResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	rs := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An EC2 placement group, tagged `managed-by = pgbench`. Give its `name` to the `ec2.placement_group` of " +
			"the hosts that must share it: in a `cluster` group a metal server and the client host that drives it are a short, fast " +
			"network hop apart, in one availability zone. Destroy deletes it once its instances are terminated (Terraform destroys the " +
			"hosts that name it first). Import it by name.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "The group's name."},
			"name": schema.StringAttribute{
				Required: true, PlanModifiers: rs,
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 255)},
				MarkdownDescription: "Name of the group, unique in the account and region (at most 255 ASCII characters).",
			},
			"strategy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("cluster"), PlanModifiers: rs,
				Validators:          []validator.String{stringvalidator.OneOf(ec2host.PlacementStrategies...)},
				MarkdownDescription: "How EC2 places the group's instances: `cluster` (close together in one zone), `spread` or `partition` (apart). Default `cluster`.",
			},
			"region": schema.StringAttribute{
				Optional: true, PlanModifiers: rs,
				MarkdownDescription: "Region of the group. Default: the provider's `aws.region`, then `AWS_REGION`; the hosts in it must be in the same region.",
			},
			"tags": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Tags of the group besides `managed-by`.",
			},
			"poll_interval": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "How often destroy asks EC2 again while instances still terminating hold the group. Default `15s`.",
			},
			"placement_group_id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "EC2's id of the group (`pg-...`)."},
			"arn":                schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "ARN of the group."},
		},
	}
}

func (r *placementGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// open reads the group's model from src (the plan or the state) and
// builds the EC2 client of its region.
func (r *placementGroupResource) open(ctx context.Context, src interface {
	Get(context.Context, any) diag.Diagnostics
}, diags *diag.Diagnostics) (*placementGroupModel, *ec2host.Client, bool) {
	var m placementGroupModel
	diags.Append(src.Get(ctx, &m)...)
	if diags.HasError() {
		return nil, nil, false
	}
	c, err := ec2Client(ctx, r.data, m.Region.ValueString(), m.PollInterval.ValueString())
	if err != nil {
		diags.AddError("EC2 Client Unavailable", fmt.Sprintf("Building the EC2 client failed: %v. Set the provider's aws.region (or region here) and AWS credentials.", err))
		return nil, nil, false
	}
	return &m, c, true
}

func (r *placementGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	m, c, ok := r.open(ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	tags := map[string]string{}
	if !m.Tags.IsNull() {
		resp.Diagnostics.Append(m.Tags.ElementsAs(ctx, &tags, false)...)
	}
	g, err := c.CreatePlacementGroup(ctx, m.Name.ValueString(), m.Strategy.ValueString(), tags)
	if err != nil {
		resp.Diagnostics.AddAttributeError(fwpath.Root("name"), "Placement Group Not Created",
			fmt.Sprintf("%v. A group of that name may exist already (import it, or choose another name); the credentials need ec2:CreatePlacementGroup and ec2:CreateTags.", err))
		return
	}
	tflog.Info(ctx, "created placement group", map[string]any{"name": g.Name, "id": g.ID, "strategy": g.Strategy})
	m.setGroup(g)
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

func (m *placementGroupModel) setGroup(g *ec2host.PlacementGroup) {
	m.ID, m.Name, m.Strategy = types.StringValue(g.Name), types.StringValue(g.Name), types.StringValue(g.Strategy)
	m.PlacementGroupID, m.ARN = types.StringValue(g.ID), types.StringValue(g.ARN)
}

// Read drops a group deleted outside Terraform from state.
func (r *placementGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	m, c, ok := r.open(ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	g, err := c.DescribePlacementGroup(ctx, m.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("EC2 Describe Failed", fmt.Sprintf("%v. Check the credentials' ec2:DescribePlacementGroups permission.", err))
		return
	}
	if g == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	m.setGroup(g)
	// The tags besides managed-by, so that an imported group compares
	// with its configuration.
	delete(g.Tags, ec2host.TagManagedBy)
	if len(g.Tags) > 0 || !m.Tags.IsNull() {
		tags, d := types.MapValueFrom(ctx, types.StringType, g.Tags)
		resp.Diagnostics.Append(d...)
		m.Tags = tags
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

// Update changes only poll_interval (every other argument replaces).
func (r *placementGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m placementGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *placementGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	m, c, ok := r.open(ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, placementGroupDeleteTimeout)
	defer cancel()
	if err := c.DeletePlacementGroup(ctx, m.ID.ValueString()); err != nil {
		resp.Diagnostics.AddError("Placement Group Not Deleted", fmt.Sprintf("%v. An instance outside this configuration may still be in it; "+
			"terminate it and destroy again (the credentials need ec2:DeletePlacementGroup).", err))
	}
}

// ImportState imports a group by its name.
func (r *placementGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, fwpath.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, fwpath.Root("name"), req.ID)...)
}
