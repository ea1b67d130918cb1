package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
)

// The tags of an ec2 host change in place: tags_all is planned from the
// provider's default_tags and the block's tags (ModifyPlan), refreshed
// from the instance (Read), and a change is applied to the instance and
// its volumes with CreateTags and DeleteTags (Update).

var ec2TagsAllPath = fwpath.Root("ec2").AtName("tags_all")

// planEC2Tags plans ec2.tags_all: default_tags under tags, unknown while
// either is.
func (r *hostResource) planEC2Tags(ctx context.Context, plan *tfsdk.Plan, diags *diag.Diagnostics) {
	var block types.Object
	diags.Append(plan.GetAttribute(ctx, fwpath.Root("ec2"), &block)...)
	if r.data == nil || block.IsNull() || block.IsUnknown() {
		return
	}
	var tags types.Map
	diags.Append(plan.GetAttribute(ctx, fwpath.Root("ec2").AtName("tags"), &tags)...)
	diags.Append(plan.SetAttribute(ctx, ec2TagsAllPath, r.mergedTags(ctx, tags, diags))...)
}

// mergedTags is tags_all for the block's tags: the provider's
// default_tags under them; unknown while either is.
func (r *hostResource) mergedTags(ctx context.Context, tags types.Map, diags *diag.Diagnostics) types.Map {
	if tags.IsUnknown() || r.data.aws.DefaultTagsUnknown {
		return types.MapUnknown(types.StringType)
	}
	own := map[string]string{}
	if !tags.IsNull() {
		diags.Append(tags.ElementsAs(ctx, &own, false)...)
	}
	return stringMap(ec2host.MergeTags(r.data.aws.DefaultTags, own))
}

// readEC2Tags sets tags_all to the user tags the instance carries, and
// tags to those of them the configuration's tags would hold: the ones
// state had in tags, and those that are not the provider's default value.
// An imported host (no tags in state) gets all its non-default tags.
func (e *ec2Model) readEC2Tags(ctx context.Context, instanceTags, defaults map[string]string) diag.Diagnostics {
	var diags diag.Diagnostics
	prior, priorAll := map[string]string{}, map[string]string{}
	if !e.Tags.IsNull() && !e.Tags.IsUnknown() {
		diags.Append(e.Tags.ElementsAs(ctx, &prior, false)...)
	}
	if !e.TagsAll.IsNull() && !e.TagsAll.IsUnknown() {
		diags.Append(e.TagsAll.ElementsAs(ctx, &priorAll, false)...)
	}
	_, named := priorAll["Name"]
	_, ownName := prior["Name"]
	all := ec2host.UserTags(instanceTags, named || ownName)
	own := map[string]string{}
	for k, v := range all {
		_, had := prior[k]
		if d, isDefault := defaults[k]; had || !isDefault || d != v {
			own[k] = v
		}
	}
	e.TagsAll = stringMap(all)
	if len(own) > 0 || !e.Tags.IsNull() {
		e.Tags = stringMap(own)
	}
	return diags
}

// ec2UpdateTags applies a change of tags_all to the instance and its
// volumes, and records the new tags in state at once.
func (r *hostResource) ec2UpdateTags(ctx context.Context, m, prior *hostModel, state *tfsdk.State, diags *diag.Diagnostics) bool {
	e := m.EC2
	id := e.InstanceID.ValueString()
	c, err := ec2Client(ctx, r.data, e.Region.ValueString(), e.PollInterval.ValueString())
	if err != nil {
		diags.AddError("EC2 Client Unavailable", fmt.Sprintf("%v. The tags of %s are unchanged.", err, id))
		return false
	}
	old, want := map[string]string{}, map[string]string{}
	if !prior.EC2.TagsAll.IsNull() {
		diags.Append(prior.EC2.TagsAll.ElementsAs(ctx, &old, false)...)
	}
	diags.Append(e.TagsAll.ElementsAs(ctx, &want, false)...)
	if diags.HasError() {
		return false
	}
	if err := c.UpdateTags(ctx, id, old, want); err != nil {
		diags.AddAttributeError(fwpath.Root("ec2").AtName("tags"), "EC2 Tags Not Updated", fmt.Sprintf("%v. "+
			"Check the credentials' ec2:CreateTags and ec2:DeleteTags permissions; apply again to retry (the plan shows the change again).", err))
		return false
	}
	diags.Append(state.SetAttribute(ctx, fwpath.Root("ec2").AtName("tags"), e.Tags)...)
	diags.Append(state.SetAttribute(ctx, ec2TagsAllPath, e.TagsAll)...)
	return !diags.HasError()
}

// planEC2Account refuses, at plan time, a new ec2 host whose credentials
// are of an account aws.allowed_account_ids does not list.
func (r *hostResource) planEC2Account(ctx context.Context, plan *tfsdk.Plan, diags *diag.Diagnostics) {
	if r.data == nil || len(r.data.aws.AllowedAccountIDs) == 0 {
		return
	}
	var region types.String
	diags.Append(plan.GetAttribute(ctx, fwpath.Root("ec2").AtName("region"), &region)...)
	if region.IsUnknown() || diags.HasError() {
		return
	}
	_, err := ec2Client(ctx, r.data, region.ValueString(), "")
	var na *ec2host.AccountNotAllowedError
	if errors.As(err, &na) {
		diags.AddError("AWS Account Not Allowed", fmt.Sprintf("%v. Nothing is created: use credentials of an allowed account, "+
			"or add %s to the provider's aws.allowed_account_ids.", err, na.Account))
	}
}

// hasEC2Block reports whether a plan is of an ec2 host.
func hasEC2Block(ctx context.Context, plan tfsdk.Plan) bool {
	var block types.Object
	plan.GetAttribute(ctx, fwpath.Root("ec2"), &block)
	return !block.IsNull()
}
