package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
)

// Importing an ec2 host adopts a running instance by its id. ImportState
// records only the id (and a mark in private state); Read fills in what
// DescribeInstances tells (image, zone, addresses, expiry, tags). The
// launch arguments of the configuration cannot be read back from EC2, so
// the first plan adopts them in place instead of replacing the instance
// (ModifyPlan); that update checks the instance type, pins the host key
// from the console as a create does, logs in with the configured key and
// installs the runner (ec2Adopt, then the create's setUp).

// privateEC2Imported marks, in private state, an instance imported and
// not yet adopted by an apply.
const privateEC2Imported = "ec2_imported"

// privateGetter is the private state of a plan or an update.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// ec2Imported reports whether the host is an imported instance that no
// apply has adopted yet.
func ec2Imported(ctx context.Context, private privateGetter) bool {
	v, _ := private.GetKey(ctx, privateEC2Imported)
	return len(v) > 0
}

// ec2ImportState is ImportState of an instance id: the state holds the id
// and install_dir, and Read fills in the rest EC2 knows.
func ec2ImportState(ctx context.Context, id, dir string, resp *resource.ImportStateResponse) {
	strs, lists := types.StringNull(), types.ListNull(types.StringType)
	e := &ec2Model{
		Region: strs, InstanceType: strs, AMI: strs, SubnetID: strs, PlacementGroup: strs, VPCID: strs, SecurityGroupIDs: lists, SSHCIDRs: lists,
		KeyName: strs, PrivateKey: strs, Agent: types.BoolNull(), SSHUser: strs, AvailabilityZones: lists,
		Tags: types.MapNull(types.StringType), TagsAll: types.MapNull(types.StringType),
		Owner: strs, MaxLifetime: strs, HourlyPriceUSD: types.Float64Null(), PollInterval: strs, HostKeyPolicy: strs, HostKeyWait: strs,
		MetadataHTTPTokens: strs, MetadataHopLimit: types.Int64Null(), RootVolumeEncrypted: types.BoolNull(), RootVolumeKMSKeyID: strs,
		InstanceID: types.StringValue(id), ImageID: strs, AvailabilityZone: strs, PublicIP: strs, PrivateIP: strs, ExpiresAt: strs,
		HostKey: strs, HostKeySource: strs, GeneratedKeyName: strs, GeneratedPrivateKey: strs, TemporarySecurityGroupID: strs,
	}
	m := hostModel{
		ID: types.StringValue(id), Local: types.BoolNull(), InstallDir: types.StringValue(dir), EC2: e,
		Connection:         types.ObjectNull(connectionAttrTypes),
		HugepageSizes:      types.ListNull(types.Int64Type),
		TuningApplied:      types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes}),
		BootstrapInstalled: types.ListNull(types.StringType),
		Timeouts:           hostTimeoutsNull(),
	}
	m.nullFacts()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateEC2Imported, []byte("true"))...)
}

// planEC2Import checks the plan that adopts an imported instance (an
// in-place update: the replace modifiers below let its launch arguments
// come from the configuration): the configuration must give its key.
func planEC2Import(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() || !hasEC2Block(ctx, req.Plan) || !ec2Imported(ctx, req.Private) {
		return
	}
	// What the adoption finds out is unknown until it ran (keeping the
	// state's value, as for a launched instance, would keep a null).
	ec2 := fwpath.Root("ec2")
	type unknownAt struct {
		at fwpath.Path
		v  attr.Value
	}
	unknown := []unknownAt{{ec2.AtName("host_key"), types.StringUnknown()}, {ec2.AtName("public_ip"), types.StringUnknown()},
		{ec2.AtName("private_ip"), types.StringUnknown()}, {ec2.AtName("expires_at"), types.StringUnknown()},
		{fwpath.Root("bootstrap_installed"), types.ListUnknown(types.StringType)}}
	var user types.String
	var price types.Float64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, ec2.AtName("ssh_user"), &user)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, ec2.AtName("hourly_price_usd"), &price)...)
	if user.IsNull() {
		unknown = append(unknown, unknownAt{ec2.AtName("ssh_user"), types.StringUnknown()})
	}
	if price.IsNull() {
		unknown = append(unknown, unknownAt{ec2.AtName("hourly_price_usd"), types.Float64Unknown()})
	}
	for _, u := range unknown {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, u.at, u.v)...)
	}
	var key types.String
	var agent types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, fwpath.Root("ec2").AtName("private_key"), &key)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, fwpath.Root("ec2").AtName("agent"), &agent)...)
	if key.IsNull() && !agent.ValueBool() && !agent.IsUnknown() {
		var id types.String
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, fwpath.Root("ec2").AtName("instance_id"), &id)...)
		resp.Diagnostics.AddAttributeError(fwpath.Root("ec2").AtName("private_key"), "Imported EC2 Host Needs Its Key",
			fmt.Sprintf("Instance %s was imported: set ec2.key_name to the key pair it was launched with and ec2.private_key to its key "+
				"(or agent = true with the key in the ssh-agent). "+
				"The provider generates a key pair only for instances it launches itself.", id.ValueString()))
	}
}

// ec2Adopt makes an imported instance the configured host: it checks the
// instance against the configuration, then pins its host key from the
// console (as host_key_policy says) and waits until it accepts SSH with
// the configured key. Nothing is changed on the instance; on an error
// the state keeps it as imported.
func (r *hostResource) ec2Adopt(ctx context.Context, m *hostModel, state *tfsdk.State, diags *diag.Diagnostics) bool {
	e := m.EC2
	id := e.InstanceID.ValueString()
	c, err := ec2Client(ctx, r.data, e.Region.ValueString(), e.PollInterval.ValueString())
	if err != nil {
		diags.AddError("EC2 Client Unavailable", fmt.Sprintf("%v. Instance %s stays imported and unchanged.", err, id))
		return false
	}
	in, err := c.Describe(ctx, id)
	switch {
	case err != nil:
		diags.AddError("EC2 Describe Failed", fmt.Sprintf("%v. Apply again.", err))
		return false
	case in == nil:
		diags.AddError("EC2 Instance Gone", fmt.Sprintf("Instance %s is terminated or unknown: there is nothing to adopt. Remove the resource "+
			"from state (`terraform state rm`) and let the next apply launch one.", id))
		return false
	case in.Type != e.InstanceType.ValueString():
		diags.AddAttributeError(fwpath.Root("ec2").AtName("instance_type"), "Imported Instance Differs", fmt.Sprintf("Instance %s is a %s, the "+
			"configuration says %s. Set instance_type = %q: adopting it under another type would replace (terminate) it on the next plan.",
			id, in.Type, e.InstanceType.ValueString(), in.Type))
		return false
	case !e.AMI.IsNull() && in.ImageID != e.AMI.ValueString():
		diags.AddAttributeError(fwpath.Root("ec2").AtName("ami"), "Imported Instance Differs", fmt.Sprintf("Instance %s runs image %s, the "+
			"configuration says %s. Set ami = %q.", id, in.ImageID, e.AMI.ValueString(), in.ImageID))
		return false
	case in.PlacementGroup != e.PlacementGroup.ValueString():
		diags.AddAttributeError(fwpath.Root("ec2").AtName("placement_group"), "Imported Instance Differs", fmt.Sprintf("Instance %s is in "+
			"placement group %q, the configuration says %q: adopting it under another group would replace (terminate) it on the next plan.",
			id, in.PlacementGroup, e.PlacementGroup.ValueString()))
		return false
	}
	if e.SSHUser.IsUnknown() {
		// The login user of the image's family, as for a launch.
		if in.Image, err = c.DescribeImage(ctx, in.ImageID); err != nil {
			diags.AddAttributeError(fwpath.Root("ec2").AtName("ssh_user"), "Login User Unknown", fmt.Sprintf("Reading image %s of instance %s "+
				"failed: %v. Set ssh_user.", in.ImageID, id, err))
			return false
		}
	}
	e.nullComputed()
	e.setPrice(diags)
	left := func() string {
		return fmt.Sprintf(" Instance %s is left as it runs and stays imported: fix the configuration and apply again.", id)
	}
	scratch := tfsdk.State{Schema: state.Schema, Raw: state.Raw.Copy()}
	return ec2WaitReachable(ctx, c, e, in, e.PrivateKey.ValueString(), left, &scratch, diags)
}

// adoptReadFields fills what an imported instance's state lacks from
// DescribeInstances.
func (e *ec2Model) adoptReadFields(in *ec2host.Instance) {
	if e.ImageID.IsNull() {
		e.ImageID = types.StringValue(in.ImageID)
	}
	if e.AvailabilityZone.IsNull() {
		e.AvailabilityZone = types.StringValue(in.Zone)
	}
	if e.ExpiresAt.IsNull() && !in.ExpiresAt.IsZero() {
		e.ExpiresAt = types.StringValue(in.ExpiresAt.UTC().Format(time.RFC3339))
	}
}

// The plan modifiers below replace the host when the argument changes,
// except while an imported instance is adopted: its state has no launch
// arguments to compare with the configuration.

const replaceUnlessImportedDesc = "Changing it replaces the host (for an ec2 host it replaces the instance; an imported instance takes it in place on its first apply)."

func replaceUnlessImportedString() planmodifier.String {
	return stringplanmodifier.RequiresReplaceIf(func(ctx context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !ec2Imported(ctx, req.Private)
	}, replaceUnlessImportedDesc, replaceUnlessImportedDesc)
}

func replaceUnlessImportedList() planmodifier.List {
	return listplanmodifier.RequiresReplaceIf(func(ctx context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !ec2Imported(ctx, req.Private)
	}, replaceUnlessImportedDesc, replaceUnlessImportedDesc)
}

func replaceUnlessImportedObject() planmodifier.Object {
	return objectplanmodifier.RequiresReplaceIf(func(ctx context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !ec2Imported(ctx, req.Private)
	}, replaceUnlessImportedDesc, replaceUnlessImportedDesc)
}
