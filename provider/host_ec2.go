package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// The ec2 mode of pgbench_host: the hooks in resource_host.go call
// ec2Create before the shared bootstrap/tuning/runner path (which then
// reaches the instance over SSH like any ssh host), ec2Read instead of the
// SSH refresh, and ec2Delete instead of the uninstall (a terminated
// instance needs no revert).

const (
	// Values of host_key_policy.
	hostKeyConsole           = "console"
	hostKeyConsoleOrFirstUse = "console_or_first_use"
	hostKeyFirstUse          = "first_use"

	defaultEC2PollInterval = "15s"
	// defaultEC2SSHUser logs in to an image of no known family.
	defaultEC2SSHUser = "root"
	// defaultHostTimeout is the create and delete timeout: metal instances
	// take 20+ minutes to boot and as long to terminate.
	defaultHostTimeout = 40 * time.Minute
)

// ec2BlockSchema is the ec2 block of pgbench_host.
func ec2BlockSchema() schema.SingleNestedBlock {
	replaceS := []planmodifier.String{replaceUnlessImportedString()}
	replaceL := []planmodifier.List{replaceUnlessImportedList()}
	keepS := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, PlanModifiers: keepS, MarkdownDescription: desc}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Launch an EC2 instance for the benchmark and guarantee its termination: `terraform destroy` " +
			"terminates it and waits for `terminated`; the instance is launched with shutdown behaviour `terminate` " +
			"and a power-off scheduled from user data at `max_lifetime` (a dead-man switch that stops the bill even " +
			"when Terraform never comes back); it is tagged `managed-by = pgbench`, `owner` and `expires-at` so that " +
			"`pgbench_ec2_sweep` can terminate orphans. Any failure after the launch leaves the instance in state " +
			"(tainted), so the next apply or destroy terminates it. An apply killed while the instance boots leaves a launch " +
			"journal entry under the Terraform data directory (`.terraform/pgbench/launches`, or under `TF_DATA_DIR`): the next " +
			"apply in the same directory adopts that instance instead of launching a second one. Every argument except `tags`, " +
			"`hourly_price_usd`, `poll_interval` and `host_key_wait` replaces the instance. A running instance can be imported " +
			"by its id (see the import section).",
		Validators: []validator.Object{
			objectvalidator.AlsoRequires(fwpath.MatchRelative().AtName("instance_type")),
			ec2KeyCredentials{},
			ec2ExactlyOne{"ami", "image"},
			ec2ExactlyOne{"security_group_ids", "ssh_cidrs"},
		},
		Attributes: map[string]schema.Attribute{
			"region": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Region, e.g. `us-east-2`. Default: the provider's `aws.region`, then `AWS_REGION`.",
			},
			"instance_type": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Instance type, e.g. `r8i.metal-96xl` or `m6i.metal`. Required.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"ami": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Image id to launch. Exactly one of `ami` and an `image` block is required.",
				Validators:          []validator.String{stringvalidator.RegexMatches(ec2AMIPattern, "must be an image id such as ami-0123456789abcdef0")},
			},
			"subnet_id": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Subnet to launch into. Default: the default VPC's subnet of the zone.",
			},
			"placement_group": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Name of a placement group to launch into, e.g. `pgbench_placement_group.<name>.name`. In a `cluster` group " +
					"a server and its client host are a short, fast hop apart; once an instance holds a place in it, the launch goes to that " +
					"instance's zone, which must be one of `availability_zones` when they are set.",
			},
			"vpc_id": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "VPC of the temporary security group made for `ssh_cidrs` (set it with `subnet_id` outside the default VPC).",
			},
			"security_group_ids": schema.ListAttribute{
				ElementType: types.StringType, Optional: true, PlanModifiers: replaceL,
				MarkdownDescription: "Security groups for the instance. They must admit SSH from where Terraform runs. " +
					"Exactly one of `security_group_ids` and `ssh_cidrs` is required.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"ssh_cidrs": schema.ListAttribute{
				ElementType: types.StringType, Optional: true, PlanModifiers: replaceL,
				MarkdownDescription: "CIDRs to admit SSH from, e.g. `[\"203.0.113.7/32\"]`: the provider creates a temporary " +
					"security group for them and deletes it on destroy.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1),
					listvalidator.ValueStringsAre(stringvalidator.RegexMatches(ec2CIDRPattern, "must be an IPv4 CIDR such as 203.0.113.7/32"))},
			},
			"key_name": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Existing EC2 key pair to launch with; set `private_key` too, or `agent = true`. Without it the provider " +
					"generates an ed25519 key pair, imports it and deletes it on destroy.",
			},
			"agent": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "With `key_name`: log in with the keys of the running ssh-agent (`SSH_AUTH_SOCK`) instead of " +
					"`private_key`, so that no key is kept in the Terraform state. The agent must hold the key pair's private key " +
					"wherever Terraform runs, including for refresh and destroy. Changes in place.",
			},
			"private_key": schema.StringAttribute{
				Optional: true, Sensitive: true, PlanModifiers: replaceS,
				MarkdownDescription: "Private key of `key_name` (PEM or OpenSSH), e.g. `file(\"~/.ssh/bench.pem\")`.",
				Validators:          []validator.String{stringvalidator.AlsoRequires(fwpath.MatchRelative().AtParent().AtName("key_name"))},
			},
			"ssh_user": schema.StringAttribute{
				Optional: true, Computed: true,
				// Known once the image is: keep the state's value rather
				// than replace the instance over an unknown.
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), replaceUnlessImportedString()},
				MarkdownDescription: "User to log in as. Default: the login user of the image's family, as its cloud-init " +
					"sets it up for the launch key: `admin` (Debian), `ubuntu` (Ubuntu), `ec2-user` (Amazon Linux, RHEL, " +
					"AlmaLinux, CentOS Stream, SUSE), `rocky` (Rocky), `fedora` (Fedora); `root` for an image of no known " +
					"family. Stock images refuse root (cloud-init answers \"Please login as the user ...\"): the apply then " +
					"fails with what the server said and the user to set. A user other than root needs passwordless sudo, " +
					"as the images' default users have: tuning and packages run through `sudo -n`.",
			},
			"availability_zones": schema.ListAttribute{
				ElementType: types.StringType, Optional: true, PlanModifiers: replaceL,
				MarkdownDescription: "Zones to try in order when one lacks capacity for the type (e.g. " +
					"`[\"us-east-2a\", \"us-east-2b\", \"us-east-2c\"]`). Default: EC2 chooses.",
			},
			"tags": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Extra tags for the instance and its volumes, over the provider's `aws.default_tags`. A change is applied " +
					"in place (EC2 CreateTags and DeleteTags on the instance and its volumes), never by a new instance. `managed-by`, " +
					"`owner` and `expires-at` are always set by the provider and cannot be given here; `Name` defaults to `pgbench`.",
				Validators: []validator.Map{userTagKeys{}},
			},
			"tags_all": schema.MapAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "The user tags the instance and its volumes carry: the provider's `aws.default_tags` merged " +
					"with `tags` (a key in both takes the value of `tags`). Without the provider's own `managed-by`, `owner` and " +
					"`expires-at`, and without the default `Name`. A refresh reads it from the instance, so tags changed outside " +
					"Terraform show as an update.",
			},
			"owner": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "Value of the `owner` tag, which is never empty. Default, the first one known: " +
					"`USER`, `LOGNAME`, the last part of the ARN of the credentials' caller identity " +
					"(STS GetCallerIdentity: the IAM user name or the role session name), " +
					"the host name of the machine running Terraform.",
			},
			"max_lifetime": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("12h"), PlanModifiers: replaceS,
				MarkdownDescription: "Dead-man switch: the instance powers itself off, and so terminates, this long after " +
					"the launch, at `expires_at` by its own clock however long it took to boot (but at least a minute after " +
					"boot), whatever happens to Terraform. A Go duration, default `12h`.",
				Validators: []validator.String{durationValidator{min: time.Minute}},
			},
			"hourly_price_usd": schema.Float64Attribute{
				Optional: true, Computed: true,
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
				MarkdownDescription: "On-demand price per hour in USD, for cost estimates. Known for the runbook's types " +
					"(`r8i.metal-96xl` 14.45, `m6i.metal` 4.61, ...); set it for other types or regions.",
				Validators: []validator.Float64{float64validator.AtLeast(0)},
			},
			"host_key_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(hostKeyConsole),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(replaceUnlessNew,
					"Changing the policy replaces the instance (a state from before the policy existed is kept).",
					"Changing the policy replaces the instance (a state from before the policy existed is kept).")},
				MarkdownDescription: "How the instance's SSH host key is verified on first contact. `console` (default): pin the keys " +
					"cloud-init prints on the instance's console (EC2 GetConsoleOutput, which only the instance writes; the credentials " +
					"need `ec2:GetConsoleOutput`) and refuse any other; if the console shows none within `host_key_wait`, the create fails and the instance stays in state, " +
					"tainted. `console_or_first_use`: the same, but when the console shows none within `host_key_wait` (or cannot be " +
					"read) trust the key presented on first contact, with a warning. `first_use`: trust the first key presented without checking it; a man in the middle on the " +
					"path to the instance would be pinned as readily, so use it only on a network you trust.",
				Validators: []validator.String{stringvalidator.OneOf(hostKeyConsole, hostKeyConsoleOrFirstUse, hostKeyFirstUse)},
			},
			"host_key_wait": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("10m"),
				MarkdownDescription: "How long to wait for the host keys on the console (EC2 fills it a few minutes after boot). A Go duration, default `10m`.",
				Validators:          []validator.String{durationValidator{min: time.Millisecond}},
			},
			"metadata_http_tokens": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("required"),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(replaceUnlessNew,
					"Changing it replaces the instance.", "Changing it replaces the instance.")},
				MarkdownDescription: "Instance metadata service: `required` (default) answers only IMDSv2 session requests, " +
					"as AWS's security baselines expect; `optional` allows IMDSv1 too.",
				Validators: []validator.String{stringvalidator.OneOf("required", "optional")},
			},
			"metadata_hop_limit": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplaceIf(replaceUnlessNewInt64,
					"Changing it replaces the instance.", "Changing it replaces the instance.")},
				MarkdownDescription: "Hop limit of the metadata service's token responses. Default `1`: the token does not reach containers behind a bridge.",
				Validators:          []validator.Int64{int64validator.Between(1, 64)},
			},
			"root_volume_encrypted": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplaceIf(replaceUnlessNewBool,
					"Changing it replaces the instance.", "Changing it replaces the instance.")},
				MarkdownDescription: "Encrypt the root EBS volume at rest. Default `true`; the credentials then need " +
					"the KMS key's permissions (the account's default EBS key unless `root_volume_kms_key_id` is set).",
			},
			"root_volume_kms_key_id": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceS,
				MarkdownDescription: "KMS key (id, ARN or alias ARN) to encrypt the root volume with. Default: the account's default EBS key.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"poll_interval": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultEC2PollInterval),
				MarkdownDescription: "How often to check the instance's state while waiting for it to run or terminate. A Go duration, default `15s`.",
				Validators:          []validator.String{durationValidator{min: time.Millisecond}},
			},

			"instance_id":                 computed("Instance id, recorded in state as soon as EC2 returns it."),
			"image_id":                    computed("Image the instance was launched from (the newest match of `image`)."),
			"availability_zone":           computed("Zone the instance runs in."),
			"public_ip":                   computed("Public IPv4 address (empty without one)."),
			"private_ip":                  computed("Private IPv4 address."),
			"expires_at":                  computed("When the dead-man switch terminates the instance (RFC 3339), also its `expires-at` tag."),
			"host_key":                    computed("SHA256 fingerprint of the host key the instance presented on first contact, pinned from then on: one its console showed (`host_key_source = \"console\"`) or, unchecked, whatever answered (`first_use`)."),
			"generated_key_name":          computed("Name of the key pair the provider generated and imported, deleted on destroy."),
			"temporary_security_group_id": computed("Security group the provider made for `ssh_cidrs`, deleted on destroy."),
			"generated_private_key": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keepS,
				MarkdownDescription: "Private key of the generated key pair (OpenSSH format).",
			},
			"host_key_source": schema.StringAttribute{
				Computed: true, PlanModifiers: []planmodifier.String{hostKeySourceKept{}},
				MarkdownDescription: "How `host_key` was obtained: `console` (verified against the instance's console) or `first_use` (trusted on first contact).",
			},
		},
		Blocks: map[string]schema.Block{
			"image": schema.SingleNestedBlock{
				MarkdownDescription: "Look the image up instead of giving `ami`: the newest available image whose name matches.",
				PlanModifiers:       []planmodifier.Object{replaceUnlessImportedObject()},
				Validators:          []validator.Object{objectvalidator.AlsoRequires(fwpath.MatchRelative().AtName("name"))},
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Name filter with EC2 wildcards, e.g. `debian-12-amd64-*`.",
					},
					"owners": schema.ListAttribute{
						ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Owner account ids or aliases, e.g. `[\"136693071363\"]` (Debian) or `[\"amazon\"]`.",
					},
				},
			},
			"root_volume": schema.SingleNestedBlock{
				MarkdownDescription: "Root EBS volume; unset fields keep the image's defaults. The runbook uses 2 TB gp3.",
				PlanModifiers:       []planmodifier.Object{replaceUnlessImportedObject()},
				Attributes: map[string]schema.Attribute{
					"size_gb": schema.Int64Attribute{Optional: true, MarkdownDescription: "Size in GiB, e.g. `2000`.",
						Validators: []validator.Int64{int64validator.Between(1, 65536)}},
					"type": schema.StringAttribute{Optional: true, MarkdownDescription: "Volume type, e.g. `gp3`.",
						Validators: []validator.String{stringvalidator.OneOf("gp2", "gp3", "io1", "io2", "st1", "sc1", "standard")}},
					"iops": schema.Int64Attribute{Optional: true, MarkdownDescription: "Provisioned IOPS (gp3, io1, io2).",
						Validators: []validator.Int64{int64validator.Between(100, 256000)}},
					"throughput": schema.Int64Attribute{Optional: true, MarkdownDescription: "Throughput in MiB/s (gp3).",
						Validators: []validator.Int64{int64validator.Between(125, 2000)}},
				},
			},
		},
	}
}

// ec2Client builds the EC2 client of a host from the provider's aws block
// and the block's region override.
func ec2Client(ctx context.Context, data *providerData, region, poll string) (*ec2host.Client, error) {
	if data == nil {
		return nil, errors.New("the provider is not configured")
	}
	a := data.aws
	cfg := ec2host.Config{Region: a.Region, Endpoint: a.Endpoint, STSEndpoint: a.STSEndpoint, ServiceQuotasEndpoint: a.ServiceQuotasEndpoint, Profile: a.Profile,
		SharedConfigFiles: a.SharedConfigFiles, SharedCredentialsFiles: a.SharedCredentialsFiles, AssumeRole: a.AssumeRole, Now: data.now}
	if region != "" {
		cfg.Region = region
	}
	if poll != "" {
		d, err := time.ParseDuration(poll)
		if err != nil {
			return nil, fmt.Errorf("poll_interval %q: %w", poll, err)
		}
		cfg.PollInterval = d
		if d < time.Second {
			// A fast poll means a fast endpoint (a test server): keep the
			// SDK's backoff from dwarfing the waits.
			cfg.MaxBackoff = 10 * d
		}
	}
	c, err := ec2host.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if len(a.AllowedAccountIDs) > 0 {
		if err := a.account.check(ctx, c, a.AllowedAccountIDs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ec2Create launches the instance, records it in state at once, waits for
// it to run and accept SSH, and fills in the ec2 block's computed fields.
// The partial state also holds install_dir and timeouts, so that a destroy
// after a failure finds everything. It reports whether the create may
// continue with the shared path; false means the diagnostics say why.
// j is the create's launch journal entry (host_ec2_journal.go), nil for
// none: what a killed create left there is adopted or cleaned up first.
func (r *hostResource) ec2Create(ctx context.Context, m *hostModel, j *launchJournal, state *tfsdk.State, diags *diag.Diagnostics) bool {
	e := m.EC2
	c, err := ec2Client(ctx, r.data, e.Region.ValueString(), e.PollInterval.ValueString())
	var na *ec2host.AccountNotAllowedError
	switch {
	case errors.As(err, &na):
		diags.AddError("AWS Account Not Allowed", fmt.Sprintf("%v. Nothing was created: the account was checked (STS GetCallerIdentity) "+
			"before any EC2 call. Use credentials of an allowed account, or add %s to the provider's aws.allowed_account_ids.", err, na.Account))
		return false
	case err != nil:
		diags.AddAttributeError(fwpath.Root("ec2"), "EC2 Client Unavailable", fmt.Sprintf("Building the EC2 client failed: %v. "+
			"Set the provider's aws.region (or the block's region) and AWS credentials.", err))
		return false
	}
	if e.TagsAll.IsUnknown() {
		e.TagsAll = r.mergedTags(ctx, e.Tags, diags)
	}
	e.nullComputed()
	e.setPrice(diags)
	token := ec2host.NewClientToken()
	name := "pgbench-" + strings.TrimPrefix(token, "pgbench-")[:12]
	adopted, ok := r.ec2Resume(ctx, c, j, e, token, diags)
	if !ok {
		return false
	}
	spec := ec2LaunchSpec(ctx, c, e, token, diags)
	privateKey := e.PrivateKey.ValueString()
	if adopted != nil && spec.KeyName == "" {
		// The earlier create's key pair, from its journal entry.
		spec.KeyName, privateKey = e.GeneratedKeyName.ValueString(), e.GeneratedPrivateKey.ValueString()
	}
	var kp ec2host.KeyPair
	if spec.KeyName == "" {
		if kp, err = ec2host.GenerateKeyPair(); err != nil {
			diags.AddError("Key Generation Failed", err.Error())
			return false
		}
		privateKey = string(kp.PrivateKeyPEM)
	}
	keyTags := map[string]string{ec2host.TagManagedBy: ec2host.ManagedByValue}
	cidrs := listStrings(ctx, e.SSHCIDRs)
	makeGroup := len(cidrs) > 0 && adopted == nil
	// An adopted instance exists already: nothing is launched or made.
	if adopted == nil && !ec2Preflight(ctx, c, e, spec, name, kp.PublicKeyLine, keyTags, makeGroup, diags) {
		return false
	}
	undo, ok := ec2MakeLaunchResources(ctx, c, j, e, &spec, name, kp, keyTags, cidrs, makeGroup, diags)
	if !ok {
		return false
	}
	spec.OnLaunched = func(id string) { ec2Record(ctx, m, j, id, state, diags) }
	spec.OnZoneSkipped = func(zone string, err error) {
		diags.AddAttributeWarning(fwpath.Root("ec2").AtName("availability_zones"), "Availability Zone Skipped",
			fmt.Sprintf("%s cannot launch %s now (%v); trying the next zone.", zone, spec.InstanceType, err))
	}
	in, err := launchOrAdopt(ctx, c, spec, adopted)
	if err != nil {
		ec2LaunchFailed(ctx, err, e, undo, diags)
		return false
	}
	left := func() string {
		return fmt.Sprintf(" Instance %s is in state and tainted: the next apply replaces it and `terraform destroy` terminates it "+
			"(its dead-man switch also terminates it at %s).", in.ID, e.ExpiresAt.ValueString())
	}
	return ec2WaitReachable(ctx, c, e, in, privateKey, left, state, diags)
}

// setPrice fills in the hourly price from the built-in table, or warns
// that no cost can be computed.
func (e *ec2Model) setPrice(diags *diag.Diagnostics) {
	price, known := ec2host.HourlyPriceUSD(e.InstanceType.ValueString(), e.HourlyPriceUSD.ValueFloat64())
	if known {
		e.HourlyPriceUSD = types.Float64Value(price)
		return
	}
	e.HourlyPriceUSD = types.Float64Null()
	diags.AddAttributeWarning(fwpath.Root("ec2").AtName("hourly_price_usd"), "Unknown Instance Price",
		fmt.Sprintf("The built-in price table does not know %s, so no cost is computed. Set hourly_price_usd to the on-demand price.", e.InstanceType.ValueString()))
}

// ec2LaunchSpec is what the ec2 block asks to launch, with the owner tag
// resolved and the client token of this create.
func ec2LaunchSpec(ctx context.Context, c *ec2host.Client, e *ec2Model, token string, diags *diag.Diagnostics) ec2host.Spec {
	lifetime, _ := time.ParseDuration(e.MaxLifetime.ValueString())
	owner, err := c.Owner(ctx, e.Owner.ValueString())
	if err != nil {
		tflog.Info(ctx, "owner tag is the host name: no caller identity", map[string]any{"error": err.Error()})
	}
	spec := ec2host.Spec{
		InstanceType: e.InstanceType.ValueString(), ImageID: e.AMI.ValueString(),
		SubnetID: e.SubnetID.ValueString(), SecurityGroupIDs: listStrings(ctx, e.SecurityGroupIDs), KeyName: e.KeyName.ValueString(),
		AvailabilityZones: listStrings(ctx, e.AvailabilityZones), PlacementGroup: e.PlacementGroup.ValueString(),
		Name: "pgbench", Owner: owner, MaxLifetime: lifetime, ClientToken: token,
		Tags: map[string]string{},
	}
	if e.Image != nil {
		spec.ImageName, spec.ImageOwners = e.Image.Name.ValueString(), listStrings(ctx, e.Image.Owners)
	}
	if rv := e.RootVolume; rv != nil {
		spec.RootVolume = ec2host.RootVolume{SizeGB: int32(rv.SizeGB.ValueInt64()), Type: rv.Type.ValueString(),
			IOPS: int32(rv.IOPS.ValueInt64()), Throughput: int32(rv.Throughput.ValueInt64())}
	}
	spec.RootVolume.Encrypted, spec.RootVolume.KMSKeyID = e.RootVolumeEncrypted.ValueBool(), e.RootVolumeKMSKeyID.ValueString()
	spec.MetadataHTTPTokens, spec.MetadataHopLimit = e.MetadataHTTPTokens.ValueString(), int32(e.MetadataHopLimit.ValueInt64())
	if !e.TagsAll.IsNull() && !e.TagsAll.IsUnknown() {
		diags.Append(e.TagsAll.ElementsAs(ctx, &spec.Tags, false)...)
	}
	if n, ok := spec.Tags["Name"]; ok {
		spec.Name = n
	}
	return spec
}

// ec2Undo takes back, last first, what a create made before its launch
// (a generated key pair, a temporary security group) when the launch
// fails: no instance means no state.
type ec2Undo []func(context.Context) error

func (u ec2Undo) run(ctx context.Context, diags *diag.Diagnostics) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	for i := len(u) - 1; i >= 0; i-- {
		if err := u[i](cctx); err != nil {
			diags.AddWarning("EC2 Clean-up Incomplete", fmt.Sprintf("%v. Delete it by hand.", err))
		}
	}
}

// ec2MakeLaunchResources imports the generated key pair (kp, when spec
// names none) and makes the temporary security group, noting each in the
// launch journal first, and points spec at them.
func ec2MakeLaunchResources(ctx context.Context, c *ec2host.Client, j *launchJournal, e *ec2Model, spec *ec2host.Spec, name string,
	kp ec2host.KeyPair, keyTags map[string]string, cidrs []string, makeGroup bool, diags *diag.Diagnostics) (ec2Undo, bool) {
	var undo ec2Undo
	if spec.KeyName == "" {
		j.noteKey(name, string(kp.PrivateKeyPEM), diags)
		if _, err := c.ImportKeyPair(ctx, name, kp.PublicKeyLine, keyTags); err != nil {
			diags.AddAttributeError(fwpath.Root("ec2"), "Key Pair Import Failed", fmt.Sprintf("%v. Check the credentials' ec2:ImportKeyPair permission, or set key_name and private_key.", err))
			return nil, false
		}
		undo = append(undo, func(ctx context.Context) error { return c.DeleteKeyPair(ctx, name) })
		spec.KeyName = name
		e.GeneratedKeyName, e.GeneratedPrivateKey = types.StringValue(name), types.StringValue(string(kp.PrivateKeyPEM))
	}
	if makeGroup {
		j.noteGroup(name, e.VPCID.ValueString(), diags)
		sg, err := c.CreateSSHSecurityGroup(ctx, name, e.VPCID.ValueString(), cidrs, 22)
		if err != nil {
			undo.run(ctx, diags)
			diags.AddAttributeError(fwpath.Root("ec2").AtName("ssh_cidrs"), "Security Group Creation Failed", fmt.Sprintf("%v. Set vpc_id outside the default VPC, or pass security_group_ids.", err))
			return nil, false
		}
		undo = append(undo, func(ctx context.Context) error { return c.DeleteSecurityGroup(ctx, sg) })
		spec.SecurityGroupIDs = []string{sg}
		e.TemporarySecurityGroupID = types.StringValue(sg)
		j.note(e, diags)
	}
	return undo, true
}

// ec2Record puts the launched instance into state: from here on an error
// leaves a tainted resource whose destroy terminates it.
func ec2Record(ctx context.Context, m *hostModel, j *launchJournal, id string, state *tfsdk.State, diags *diag.Diagnostics) {
	e := m.EC2
	e.InstanceID = types.StringValue(id)
	j.note(e, diags)
	diags.Append(state.SetAttribute(ctx, fwpath.Root("id"), id)...)
	diags.Append(state.SetAttribute(ctx, fwpath.Root("install_dir"), m.InstallDir)...)
	diags.Append(state.SetAttribute(ctx, fwpath.Root("timeouts"), m.Timeouts)...)
	diags.Append(state.SetAttribute(ctx, fwpath.Root("ec2"), e)...)
	tflog.Info(ctx, "launched ec2 instance", map[string]any{"instance_id": id, "type": e.InstanceType.ValueString()})
}

// ec2LaunchFailed reports a failed launch and undoes what was made for it
// unless an instance it still holds is in state.
func ec2LaunchFailed(ctx context.Context, err error, e *ec2Model, undo ec2Undo, diags *diag.Diagnostics) {
	var le *ec2host.LaunchedError
	var ce *ec2host.CapacityError
	var ve *ec2host.VCPULimitError
	switch {
	case errors.As(err, &le) && le.TerminateErr != nil:
		// Recorded through OnLaunched: the destroy terminates it.
		diags.AddError("EC2 Launch Failed", fmt.Sprintf("%v. The instance is in state; `terraform destroy` terminates it.", err))
	case errors.As(err, &ce):
		undo.run(ctx, diags)
		diags.AddAttributeError(fwpath.Root("ec2").AtName("availability_zones"), "No EC2 Capacity", err.Error()+".")
	case errors.As(err, &ve):
		// EC2 refuses the quota before it creates anything.
		undo.run(ctx, diags)
		at, summary := ec2ErrorAt(err, e)
		diags.AddAttributeError(at, summary, fmt.Sprintf("%v. No instance was launched; what the create made for it (a generated key pair, a temporary security group) was deleted.", err))
	case !e.InstanceID.IsNull():
		// Created anyway and terminated by Launch: it stays in state
		// (tainted) so that destroy waits for terminated before
		// deleting the key pair and group it still holds.
		diags.AddError("EC2 Launch Failed", fmt.Sprintf("%v. Nothing is left running; the next apply or destroy finishes the clean-up.", err))
	default:
		undo.run(ctx, diags)
		diags.AddError("EC2 Launch Failed", fmt.Sprintf("%v. No instance was launched.", err))
	}
}

// ec2WaitReachable fills in what the launch told, waits for the instance
// to run, pins its host key and waits until it accepts SSH with the key,
// saving each step in state.
func ec2WaitReachable(ctx context.Context, c *ec2host.Client, e *ec2Model, in *ec2host.Instance, privateKey string,
	left func() string, state *tfsdk.State, diags *diag.Diagnostics) bool {
	e.ImageID, e.AvailabilityZone = types.StringValue(in.ImageID), types.StringValue(in.Zone)
	if e.SSHUser.IsNull() || e.SSHUser.IsUnknown() {
		user := ec2host.DefaultLoginUser(in.Image)
		if user == "" {
			user = defaultEC2SSHUser
		}
		e.SSHUser = types.StringValue(user)
	}
	if !in.ExpiresAt.IsZero() {
		e.ExpiresAt = types.StringValue(in.ExpiresAt.UTC().Format(time.RFC3339))
	}
	diags.Append(state.SetAttribute(ctx, fwpath.Root("ec2"), e)...)

	after := func(summary, detail string) bool {
		diags.AddError(summary, detail+left())
		return false
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		return after("EC2 Instance Not Running", fmt.Sprintf("%v.", err))
	}
	e.PublicIP, e.PrivateIP = types.StringValue(run.PublicIP), types.StringValue(run.PrivateIP)
	diags.Append(state.SetAttribute(ctx, fwpath.Root("ec2"), e)...)
	keys, err := ec2HostKeys(ctx, c, e, in.ID, diags)
	if err != nil {
		return after("EC2 Host Key Unavailable", fmt.Sprintf("%v. host_key_policy = %q pins only a key the instance's console shows: use an image "+
			"whose cloud-init prints its host keys, raise host_key_wait, or set host_key_policy = %q to trust the first key seen after the wait.",
			err, e.HostKeyPolicy.ValueString(), hostKeyConsoleOrFirstUse))
	}
	tflog.Info(ctx, "ec2 instance running; waiting for ssh", map[string]any{"instance_id": in.ID, "address": run.Address(), "host_keys": keys})
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: e.SSHUser.ValueString(), PrivateKey: []byte(privateKey),
		HostKeys: keys, TrustOnFirstUse: len(keys) == 0})
	var hk *remote.HostKeyError
	var refused *ec2host.LoginRefusedError
	var nosudo *ec2host.SudoError
	switch {
	case errors.As(err, &refused) || errors.As(err, &nosudo):
		diags.AddAttributeError(fwpath.Root("ec2").AtName("ssh_user"), "EC2 Login Refused", fmt.Sprintf("%v.%s", err, left()))
		return false
	case errors.As(err, &hk):
		return after("EC2 Host Key Mismatch", fmt.Sprintf("%v. Connecting was refused before anything was sent: the server at the instance's address is "+
			"not the instance its console describes (a man in the middle, or an address that reaches another machine). Check the route to %s.", err, run.Address()))
	case err != nil:
		return after("EC2 Instance Unreachable", fmt.Sprintf("%v. Check that the security group admits SSH from here and that the image admits %s with the key.", err, e.SSHUser.ValueString()))
	}
	e.HostKey = types.StringValue(ex.HostKeyFingerprint())
	e.HostKeySource = types.StringValue(hostKeyConsole)
	if len(keys) == 0 {
		e.HostKeySource = types.StringValue(hostKeyFirstUse)
	}
	ex.Close()
	diags.Append(state.SetAttribute(ctx, fwpath.Root("ec2"), e)...)
	return !diags.HasError()
}

// ec2Preflight asks EC2, with DryRun, whether the create's calls would
// succeed before any of them is made (spec as it stands without the
// generated key pair and the temporary security group; their import and
// creation are tried when they will be made), and Service Quotas whether
// the vCPU quota leaves room. A refusal is an error diagnostic on the
// attribute at fault, and nothing exists to undo; a quota that could not
// be read is a warning, and the create goes on.
func ec2Preflight(ctx context.Context, c *ec2host.Client, e *ec2Model, spec ec2host.Spec, name, publicKey string,
	keyTags map[string]string, makeGroup bool, diags *diag.Diagnostics) bool {
	unchecked, err := c.Preflight(ctx, spec)
	if unchecked != nil {
		diags.AddAttributeWarning(fwpath.Root("ec2").AtName("instance_type"), "EC2 vCPU Quota Not Checked", unchecked.Error()+".")
	}
	if err == nil && spec.KeyName == "" {
		err = c.PreflightKeyPair(ctx, name, publicKey, keyTags)
	}
	if err == nil && makeGroup {
		err = c.PreflightSecurityGroup(ctx, name, e.VPCID.ValueString())
	}
	if err == nil && e.HostKeyPolicy.ValueString() == hostKeyConsole {
		// Only this policy fails without the console; the others fall
		// back to the first key seen.
		err = c.PreflightConsoleOutput(ctx)
	}
	if err == nil {
		return true
	}
	at, summary := ec2ErrorAt(err, e)
	diags.AddAttributeError(at, summary, fmt.Sprintf("%v. Nothing was created: the check ran before any key pair, "+
		"security group or instance.", err))
	return false
}

// ec2ErrorAt is the attribute at fault and the summary for an error that
// refuses a launch (the preflight's, or the launch's vCPU quota).
func ec2ErrorAt(err error, e *ec2Model) (fwpath.Path, string) {
	var pe *ec2host.PermissionError
	var ve *ec2host.VCPULimitError
	at := fwpath.Root("ec2")
	switch {
	case errors.As(err, &pe):
		return at, "EC2 Permission Missing"
	case errors.As(err, &ve):
		return at.AtName("instance_type"), "EC2 vCPU Quota Exceeded"
	case errors.Is(err, ec2host.ErrUnknownInstanceType):
		return at.AtName("instance_type"), "Unknown Instance Type"
	case errors.Is(err, ec2host.ErrNoImage) && !e.AMI.IsNull():
		return at.AtName("ami"), "EC2 Image Not Found"
	case errors.Is(err, ec2host.ErrNoImage):
		return at.AtName("image"), "EC2 Image Not Found"
	case strings.Contains(err.Error(), "InvalidPlacementGroup"):
		return at.AtName("placement_group"), "EC2 Placement Group Refused"
	}
	return at, "EC2 Preflight Failed"
}

// ec2HostKeys returns the host keys to pin for instance id as its
// host_key_policy says: the console's, or none (trust on first use) for
// first_use and for console_or_first_use once the console showed none in
// host_key_wait (with a warning). An error means the create must stop.
func ec2HostKeys(ctx context.Context, c *ec2host.Client, e *ec2Model, id string, diags *diag.Diagnostics) ([]string, error) {
	policy := e.HostKeyPolicy.ValueString()
	if policy == hostKeyFirstUse {
		return nil, nil
	}
	wait, err := time.ParseDuration(e.HostKeyWait.ValueString())
	if err != nil {
		return nil, fmt.Errorf("host_key_wait %q: %w", e.HostKeyWait.ValueString(), err)
	}
	keys, err := c.HostKeysFromConsole(ctx, id, wait)
	if err == nil || policy != hostKeyConsoleOrFirstUse || ctx.Err() != nil {
		return keys, err
	}
	diags.AddAttributeWarning(fwpath.Root("ec2").AtName("host_key_policy"), "Host Key Not Verified",
		fmt.Sprintf("%v. As host_key_policy = %q, the key instance %s presents on first contact is trusted and pinned unchecked "+
			"(host_key_source = %q): a man in the middle would be pinned as readily.", err, hostKeyConsoleOrFirstUse, id, hostKeyFirstUse))
	return nil, nil
}

// ec2Read is Read for an ec2 host. Only EC2 decides whether the host
// exists: a terminated instance is dropped from state with a warning, but
// one that cannot be reached over SSH (or lost its runner) keeps its state
// with a warning, so that a destroy, which refreshes first, can always
// terminate it.
func (r *hostResource) ec2Read(ctx context.Context, m *hostModel, resp *resource.ReadResponse) {
	e := m.EC2
	id := e.InstanceID.ValueString()
	if id == "" {
		resp.State.RemoveResource(ctx)
		return
	}
	ec2host.ForgetLaunch(id)
	c, err := ec2Client(ctx, r.data, e.Region.ValueString(), e.PollInterval.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("EC2 Client Unavailable", err.Error())
		return
	}
	in, err := c.Describe(ctx, id)
	if err != nil {
		resp.Diagnostics.AddError("EC2 Describe Failed", fmt.Sprintf("%v. Retry the refresh.", err))
		return
	}
	if in == nil {
		detail := fmt.Sprintf("Instance %s was terminated outside Terraform (or by its dead-man switch); it is removed from state and the next apply launches a new one.", id)
		// Nothing else would ever delete what was made for the instance.
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if sg := e.TemporarySecurityGroupID.ValueString(); sg != "" {
			if err := c.DeleteSecurityGroup(cctx, sg); err != nil {
				detail += fmt.Sprintf(" Its temporary security group could not be deleted (%v): delete it by hand.", err)
			}
		}
		if k := e.GeneratedKeyName.ValueString(); k != "" {
			if err := c.DeleteKeyPair(cctx, k); err != nil {
				detail += fmt.Sprintf(" Its key pair could not be deleted (%v): delete it by hand.", err)
			}
		}
		resp.Diagnostics.AddWarning("EC2 Instance Gone", detail)
		resp.State.RemoveResource(ctx)
		return
	}
	if in.State == "shutting-down" || in.State == "stopping" || in.State == "stopped" {
		// Still EC2's to finish: a destroy waits for terminated and then
		// deletes the key pair and the group.
		resp.Diagnostics.AddWarning("EC2 Instance Not Running", fmt.Sprintf("Instance %s is %s outside Terraform; destroy it, or refresh again once it is terminated to launch a new one.", id, in.State))
		return
	}
	e.PublicIP, e.PrivateIP = types.StringValue(in.PublicIP), types.StringValue(in.PrivateIP)
	e.adoptReadFields(in)
	resp.Diagnostics.Append(e.readEC2Tags(ctx, in.Tags, r.data.aws.DefaultTags)...)
	if e.reachable() {
		if err := m.refreshOverSSH(ctx); err != nil {
			resp.Diagnostics.AddWarning("EC2 Host Facts Not Refreshed", fmt.Sprintf("Instance %s runs, but %v. "+
				"Its facts are kept from the last refresh; `terraform destroy` still terminates it.", id, err))
		}
	}
	if m.BootstrapInstalled.IsUnknown() {
		m.BootstrapInstalled = types.ListNull(types.StringType)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

// refreshOverSSH reads the facts of a running instance from its runner.
func (m *hostModel) refreshOverSSH(ctx context.Context) error {
	ex, err := m.connection().dial(ctx)
	if err != nil {
		return fmt.Errorf("ssh to it failed: %w", err)
	}
	defer ex.Close()
	runner := runnerclient.BinaryPath(m.InstallDir.ValueString())
	v, err := runnerbin.RunnerVersion(ctx, ex, runner)
	if err != nil {
		return fmt.Errorf("its runner does not answer (%w); `terraform apply -replace` re-creates the host", err)
	}
	return m.refresh(ctx, ex, runner, v)
}

// ec2Delete terminates the instance and waits for terminated, then deletes
// the generated key pair and the temporary security group.
func (r *hostResource) ec2Delete(ctx context.Context, e *ec2Model, diags *diag.Diagnostics) {
	c, err := ec2Client(ctx, r.data, e.Region.ValueString(), e.PollInterval.ValueString())
	if err != nil {
		diags.AddError("EC2 Client Unavailable", fmt.Sprintf("%v. The instance %s is NOT terminated yet; fix the provider configuration and destroy again.", err, e.InstanceID.ValueString()))
		return
	}
	if id := e.InstanceID.ValueString(); id != "" {
		tflog.Info(ctx, "terminating ec2 instance", map[string]any{"instance_id": id})
		if err := c.Terminate(ctx, id); err != nil {
			diags.AddError("EC2 Termination Failed", fmt.Sprintf("%v. Destroy again to keep waiting; the instance stays in state until EC2 reports it terminated.", err))
			return
		}
	}
	if sg := e.TemporarySecurityGroupID.ValueString(); sg != "" {
		if err := c.DeleteSecurityGroup(ctx, sg); err != nil {
			diags.AddError("Security Group Deletion Failed", fmt.Sprintf("The instance is terminated, but %v. Destroy again or delete the group by hand.", err))
			return
		}
	}
	if k := e.GeneratedKeyName.ValueString(); k != "" {
		if err := c.DeleteKeyPair(ctx, k); err != nil {
			diags.AddError("Key Pair Deletion Failed", fmt.Sprintf("The instance is terminated, but %v. Destroy again or delete the key pair by hand.", err))
		}
	}
}

// connection is how the other resources reach the instance: SSH to its
// address, with the launch key and the host key seen on first contact.
func (e *ec2Model) connection(installDir string, id types.String) connectionModel {
	addr := e.PublicIP.ValueString()
	if addr == "" {
		addr = e.PrivateIP.ValueString()
	}
	key := e.PrivateKey
	if (key.IsNull() || key.ValueString() == "") && !e.Agent.ValueBool() {
		key = e.GeneratedPrivateKey
	}
	return connectionModel{
		Mode: types.StringValue("ssh"), Host: types.StringValue(addr), Port: types.Int64Value(22), User: e.SSHUser,
		PrivateKey: key, HostKey: e.HostKey, Agent: e.Agent,
		BastionHost: types.StringNull(), BastionPort: types.Int64Null(), BastionUser: types.StringNull(),
		BastionPrivateKey: types.StringNull(), BastionHostKey: types.StringNull(),
		RunnerPath: types.StringValue(runnerclient.BinaryPath(installDir)), HostID: id,
	}
}

// reachable reports whether state knows enough to SSH to the instance (a
// create that failed while waiting does not).
func (e *ec2Model) reachable() bool {
	return e.HostKey.ValueString() != "" && (e.PublicIP.ValueString() != "" || e.PrivateIP.ValueString() != "")
}

// nullComputed replaces the plan's unknown computed values by nulls, so a
// partial state can be saved before they are known.
func (e *ec2Model) nullComputed() {
	for _, s := range []*types.String{&e.InstanceID, &e.ImageID, &e.AvailabilityZone, &e.PublicIP, &e.PrivateIP,
		&e.ExpiresAt, &e.HostKey, &e.HostKeySource, &e.GeneratedKeyName, &e.TemporarySecurityGroupID, &e.GeneratedPrivateKey, &e.SSHUser} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if e.HourlyPriceUSD.IsUnknown() {
		e.HourlyPriceUSD = types.Float64Null()
	}
	if e.TagsAll.IsUnknown() {
		e.TagsAll = types.MapNull(types.StringType)
	}
}

// replaceUnlessNew replaces the instance when a setting changes, but not
// when state predates the attribute (null): upgrading the provider must
// not replace running instances.
func replaceUnlessNew(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull() && !req.PlanValue.Equal(req.StateValue)
}

// replaceUnlessNewInt64 and replaceUnlessNewBool are replaceUnlessNew
// for numbers and switches.
func replaceUnlessNewInt64(_ context.Context, req planmodifier.Int64Request, resp *int64planmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull() && !req.PlanValue.Equal(req.StateValue)
}

func replaceUnlessNewBool(_ context.Context, req planmodifier.BoolRequest, resp *boolplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull() && !req.PlanValue.Equal(req.StateValue)
}

// hostKeySourceKept plans host_key_source: unknown on create, else the
// state's value; a state from before it existed pinned its key on first
// use, which is what it records then.
type hostKeySourceKept struct{}

func (hostKeySourceKept) Description(context.Context) string {
	return "keeps the recorded host key source; first_use for states that predate it"
}
func (m hostKeySourceKept) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }
func (hostKeySourceKept) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	switch {
	case req.State.Raw.IsNull() || req.Plan.Raw.IsNull():
	case ec2Imported(ctx, req.Private):
		// Adopting the instance pins its key now.
	case !req.StateValue.IsNull():
		resp.PlanValue = req.StateValue
	default:
		resp.PlanValue = types.StringValue(hostKeyFirstUse)
	}
}

// ec2ExactlyOne requires exactly one of two attributes of a present ec2
// block (the framework's path validators also fire when the block is
// absent, i.e. for ssh and local hosts).
type ec2ExactlyOne struct{ a, b string }

func (v ec2ExactlyOne) Description(context.Context) string {
	return fmt.Sprintf("exactly one of %s and %s must be set", v.a, v.b)
}
func (v ec2ExactlyOne) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v ec2ExactlyOne) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	set := 0
	for _, name := range []string{v.a, v.b} {
		val, ok := req.ConfigValue.Attributes()[name]
		if !ok {
			continue
		}
		if val.IsUnknown() {
			return
		}
		if !val.IsNull() {
			set++
		}
	}
	if set != 1 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid EC2 Host",
			fmt.Sprintf("The ec2 block sets %d of %s and %s; set exactly one.", set, v.a, v.b))
	}
}

// ec2Model is the ec2 block of pgbench_host.
type ec2Model struct {
	Region              types.String        `tfsdk:"region"`
	InstanceType        types.String        `tfsdk:"instance_type"`
	AMI                 types.String        `tfsdk:"ami"`
	Image               *ec2ImageModel      `tfsdk:"image"`
	SubnetID            types.String        `tfsdk:"subnet_id"`
	PlacementGroup      types.String        `tfsdk:"placement_group"`
	VPCID               types.String        `tfsdk:"vpc_id"`
	SecurityGroupIDs    types.List          `tfsdk:"security_group_ids"`
	SSHCIDRs            types.List          `tfsdk:"ssh_cidrs"`
	KeyName             types.String        `tfsdk:"key_name"`
	PrivateKey          types.String        `tfsdk:"private_key"`
	Agent               types.Bool          `tfsdk:"agent"`
	SSHUser             types.String        `tfsdk:"ssh_user"`
	RootVolume          *ec2RootVolumeModel `tfsdk:"root_volume"`
	AvailabilityZones   types.List          `tfsdk:"availability_zones"`
	Tags                types.Map           `tfsdk:"tags"`
	TagsAll             types.Map           `tfsdk:"tags_all"`
	Owner               types.String        `tfsdk:"owner"`
	MaxLifetime         types.String        `tfsdk:"max_lifetime"`
	HourlyPriceUSD      types.Float64       `tfsdk:"hourly_price_usd"`
	PollInterval        types.String        `tfsdk:"poll_interval"`
	HostKeyPolicy       types.String        `tfsdk:"host_key_policy"`
	HostKeyWait         types.String        `tfsdk:"host_key_wait"`
	MetadataHTTPTokens  types.String        `tfsdk:"metadata_http_tokens"`
	MetadataHopLimit    types.Int64         `tfsdk:"metadata_hop_limit"`
	RootVolumeEncrypted types.Bool          `tfsdk:"root_volume_encrypted"`
	RootVolumeKMSKeyID  types.String        `tfsdk:"root_volume_kms_key_id"`

	InstanceID               types.String `tfsdk:"instance_id"`
	ImageID                  types.String `tfsdk:"image_id"`
	AvailabilityZone         types.String `tfsdk:"availability_zone"`
	PublicIP                 types.String `tfsdk:"public_ip"`
	PrivateIP                types.String `tfsdk:"private_ip"`
	ExpiresAt                types.String `tfsdk:"expires_at"`
	HostKey                  types.String `tfsdk:"host_key"`
	HostKeySource            types.String `tfsdk:"host_key_source"`
	GeneratedKeyName         types.String `tfsdk:"generated_key_name"`
	GeneratedPrivateKey      types.String `tfsdk:"generated_private_key"`
	TemporarySecurityGroupID types.String `tfsdk:"temporary_security_group_id"`
}

type ec2ImageModel struct {
	Name   types.String `tfsdk:"name"`
	Owners types.List   `tfsdk:"owners"`
}

type ec2RootVolumeModel struct {
	SizeGB     types.Int64  `tfsdk:"size_gb"`
	Type       types.String `tfsdk:"type"`
	IOPS       types.Int64  `tfsdk:"iops"`
	Throughput types.Int64  `tfsdk:"throughput"`
}

var (
	ec2AMIPattern  = regexp.MustCompile(`^ami-[0-9a-f]{8,17}$`)
	ec2CIDRPattern = regexp.MustCompile(`^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$`)
)

var ec2InstanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// ec2KeyCredentials checks how an ec2 block logs in with its key_name:
// private_key or agent = true, exactly one, and neither without key_name
// (a generated key pair brings its own key).
type ec2KeyCredentials struct{}

func (ec2KeyCredentials) Description(context.Context) string {
	return "key_name needs exactly one of private_key and agent = true, which need key_name"
}
func (v ec2KeyCredentials) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (ec2KeyCredentials) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	name, _ := a["key_name"].(types.String)
	key, _ := a["private_key"].(types.String)
	agent, _ := a["agent"].(types.Bool)
	if name.IsUnknown() || key.IsUnknown() || agent.IsUnknown() {
		return
	}
	switch hasName, hasKey, useAgent := !name.IsNull(), !key.IsNull(), agent.ValueBool(); {
	case hasKey && useAgent:
		resp.Diagnostics.AddAttributeError(req.Path.AtName("agent"), "Conflicting SSH Credentials",
			"The ec2 block sets both private_key and agent = true. Keep private_key, or remove it to log in through the ssh-agent at SSH_AUTH_SOCK.")
	case hasName && !hasKey && !useAgent:
		resp.Diagnostics.AddAttributeError(req.Path.AtName("private_key"), "Missing SSH Credentials",
			"The ec2 block names key_name but no way to log in with it: set private_key (e.g. file(\"~/.ssh/bench.pem\")), or agent = true "+
				"to use the keys of the ssh-agent at SSH_AUTH_SOCK.")
	case !hasName && (hasKey || useAgent):
		resp.Diagnostics.AddAttributeError(req.Path.AtName("key_name"), "Missing Key Pair Name",
			"The ec2 block sets private_key or agent but no key_name: name the EC2 key pair they belong to, or remove them to have a key pair generated.")
	}
}
