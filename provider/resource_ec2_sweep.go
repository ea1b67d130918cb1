package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var _ resource.ResourceWithConfigure = (*ec2SweepResource)(nil)

// NewEC2SweepResource returns the pgbench_ec2_sweep resource.
func NewEC2SweepResource() resource.Resource { return &ec2SweepResource{} }

// ec2SweepResource terminates expired orphans when it is created. It is a
// resource, not a data source, because it changes the world: a plan must
// show it and an apply must be asked for.
type ec2SweepResource struct {
	data *providerData
}

func (r *ec2SweepResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ec2_sweep"
}

func (r *ec2SweepResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Terminates, when created, every EC2 instance tagged `managed-by = pgbench` whose `expires-at` " +
			"tag has passed: the orphans of lost state files whose dead-man switch did not fire. Instances without a " +
			"readable `expires-at` are never touched. Change `triggers` (e.g. to `timestamp()`'s day) to sweep again; " +
			"destroying the resource terminates nothing.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "Region and time of the sweep.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"region": schema.StringAttribute{
				Optional: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Region to sweep. Default: the provider's `aws.region`, then `AWS_REGION`.",
			},
			"triggers": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Arbitrary values; changing any sweeps again.",
			},
			"terminated_instance_ids": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Instances the sweep terminated (it does not wait for `terminated`).",
			},
			"swept_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the sweep ran (RFC 3339)."},
		},
	}
}

func (r *ec2SweepResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

func (r *ec2SweepResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m ec2SweepModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := ec2Client(ctx, r.data, m.Region.ValueString(), "")
	if err != nil {
		resp.Diagnostics.AddError("EC2 Client Unavailable", fmt.Sprintf("Building the EC2 client failed: %v. Set the provider's aws.region (or region here) and AWS credentials.", err))
		return
	}
	now := r.data.now()
	ids, err := c.Sweep(ctx, now)
	if err != nil {
		resp.Diagnostics.AddError("EC2 Sweep Failed", fmt.Sprintf("%v. Check the credentials' ec2:DescribeInstances and ec2:TerminateInstances permissions and apply again.", err))
		return
	}
	vals := make([]attr.Value, len(ids))
	for i, id := range ids {
		vals[i] = types.StringValue(id)
	}
	if len(ids) > 0 {
		resp.Diagnostics.AddWarning("Expired Instances Terminated",
			fmt.Sprintf("Terminated %d expired pgbench instance(s): %v.", len(ids), ids))
	}
	tflog.Info(ctx, "ec2 sweep", map[string]any{"terminated": ids})
	m.TerminatedInstanceIDs = types.ListValueMust(types.StringType, vals)
	m.SweptAt = types.StringValue(now.UTC().Format(time.RFC3339))
	m.ID = types.StringValue(fmt.Sprintf("%s@%s", c.Region(), m.SweptAt.ValueString()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps the record of the sweep: there is nothing remote to refresh.
func (r *ec2SweepResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m ec2SweepModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update cannot happen (every argument replaces); it keeps the plan.
func (r *ec2SweepResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m ec2SweepModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete forgets the record; it terminates nothing.
func (r *ec2SweepResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

type ec2SweepModel struct {
	ID                    types.String `tfsdk:"id"`
	Region                types.String `tfsdk:"region"`
	Triggers              types.Map    `tfsdk:"triggers"`
	TerminatedInstanceIDs types.List   `tfsdk:"terminated_instance_ids"`
	SweptAt               types.String `tfsdk:"swept_at"`
}
