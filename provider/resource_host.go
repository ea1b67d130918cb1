package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pkgmgr"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

var (
	_ resource.ResourceWithImportState      = (*hostResource)(nil)
	_ resource.ResourceWithConfigValidators = (*hostResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*hostResource)(nil)
	_ resource.ResourceWithConfigure        = (*hostResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*hostResource)(nil)
)

// NewHostResource returns the pgbench_host resource.
func NewHostResource() resource.Resource { return &hostResource{} }

type hostResource struct {
	data *providerData
}

func (r *hostResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host"
}

func (r *hostResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{replaceUnlessImportedString()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A benchmark host: an EC2 instance it launches (`ec2` block, terminated on destroy), an existing machine reached over SSH (`ssh` block) or the machine " +
			"Terraform runs on (`local = true`). The provider installs `pgbench-runner` on it, optionally installs " +
			"packages and tunes the OS (recording the previous values), and exports its facts and a `connection_info` " +
			"object for the other resources.\n\n" +
			"Destroy (`pgbench-runner uninstall`) reverts the tuning to the recorded previous values, removes the data " +
			"directories of campaigns that never finished (keeping their reports), and removes the runner and its state files " +
			"from `install_dir`. Packages installed by `bootstrap` are kept on purpose: other software on the host " +
			"may depend on them; `bootstrap_installed` lists them so you can remove them yourself.\n\n" +
			"The SSH user, port, key (or `agent`), jump host and timeouts change in place: the update logs in with the new " +
			"values first and fails with the server's answer, keeping the old working values in state, if they do not work; " +
			"the resources on the host are not replaced. The address, the pinned host key, `local`, `install_dir`, `bootstrap` " +
			"and `tuning` name another host or another setup and force replacement (replacing reverts the old tuning before " +
			"applying the new). If `pgbench-runner` has vanished from the host, refresh " +
			"removes the resource from state so the next apply re-creates it; the tuning state file, if still there, " +
			"keeps the original previous values.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`local`, or `user@host:port` for an SSH host.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"local": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Set to `true` to use the machine Terraform runs on. Exactly one of `local` and `ssh` is required.",
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"install_dir": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(runnerbin.DefaultDir),
				PlanModifiers:       replace,
				MarkdownDescription: "Absolute directory on the host for everything this resource installs: the runner binary and the tuning state file. Default `" + runnerbin.DefaultDir + "`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(hostAbsPath, "must be an absolute path")},
			},
			"runner_version":  schema.StringAttribute{Computed: true, MarkdownDescription: "Version of the installed `pgbench-runner`."},
			"runner_sha256":   schema.StringAttribute{Computed: true, MarkdownDescription: "Hex sha256 of the installed `pgbench-runner`, verified on the host after upload."},
			"connection_info": connectionOutputAttribute(),
			"cpus":            schema.Int64Attribute{Computed: true, MarkdownDescription: "Online logical CPUs."},
			"numa_nodes":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of NUMA nodes."},
			"memory_bytes":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Total memory (MemTotal) in bytes."},
			"cpu_model":       schema.StringAttribute{Computed: true, MarkdownDescription: "CPU model name."},
			"kernel":          schema.StringAttribute{Computed: true, MarkdownDescription: "Kernel release (`uname -r`)."},
			"hugepage_sizes": schema.ListAttribute{
				ElementType: types.Int64Type, Computed: true,
				MarkdownDescription: "Huge page sizes the kernel supports, in bytes, smallest first (e.g. `[2097152, 1073741824]`).",
			},
			"tuning_applied": schema.MapNestedAttribute{
				Computed: true,
				MarkdownDescription: "Per tuning knob that was requested (`numa_balancing`, `cpu_governor`, `transparent_hugepages`): " +
					"the `previous` value that destroy restores, the `value` set, and the `status` (`applied`, `unchanged`, " +
					"or `unsupported` when the host lacks the knob, e.g. no cpufreq), with a `reason` for unsupported knobs.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"previous": schema.StringAttribute{Computed: true, MarkdownDescription: "Value before tuning."},
					"value":    schema.StringAttribute{Computed: true, MarkdownDescription: "Value set."},
					"status":   schema.StringAttribute{Computed: true, MarkdownDescription: "`applied`, `unchanged` or `unsupported`."},
					"reason":   schema.StringAttribute{Computed: true, MarkdownDescription: "Why a knob is unsupported."},
				}},
			},
			"bootstrap_installed": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Packages from `bootstrap.packages` that were missing and were installed. Destroy keeps them.",
			},
		},
		Blocks: map[string]schema.Block{
			"ec2":      ec2BlockSchema(),
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
			"ssh":      sshBlockSchema(),
			"bootstrap": schema.SingleNestedBlock{
				MarkdownDescription: "Packages to install with the host's package manager when missing (`pgbench-runner bootstrap`).",
				Attributes: map[string]schema.Attribute{
					"packages": schema.ListAttribute{
						ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Package names, e.g. `[\"postgresql\", \"numactl\"]`.",
						Validators:          []validator.List{packageNames{}},
					},
				},
				PlanModifiers: []planmodifier.Object{replaceUnlessImportedObject()},
			},
			"tuning": schema.SingleNestedBlock{
				MarkdownDescription: "OS knobs set with `pgbench-runner tune apply`; the previous values are kept in " +
					"`INSTALL_DIR/tune-state.json` and in `tuning_applied`, and destroy restores them.",
				Attributes: map[string]schema.Attribute{
					"numa_balancing": schema.StringAttribute{
						Optional: true, MarkdownDescription: "Automatic NUMA balancing: `off` or `on`.",
						Validators: []validator.String{stringvalidator.OneOf("off", "on")},
					},
					"cpu_governor": schema.StringAttribute{
						Optional: true, MarkdownDescription: "CPU frequency governor for every CPU, e.g. `performance`.",
						Validators: []validator.String{stringvalidator.RegexMatches(hostGovernorName, "must be a governor name such as performance")},
					},
					"transparent_hugepages": schema.StringAttribute{
						Optional: true, MarkdownDescription: "Transparent huge pages: `never`, `madvise` or `always`.",
						Validators: []validator.String{stringvalidator.OneOf("never", "madvise", "always")},
					},
					"strict": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Fail when the host lacks a requested knob. By default a missing knob " +
							"(e.g. no cpufreq in a VM) is recorded as `unsupported` and is not an error.",
					},
				},
				PlanModifiers: []planmodifier.Object{replaceUnlessImportedObject()},
			},
		},
	}
}

func (r *hostResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

// localHostSupported says why the machine Terraform runs on cannot be a
// benchmark host: the runner, huge pages, tuning and numactl are Linux's.
func localHostSupported(goos string) error {
	if goos == "linux" {
		return nil
	}
	return fmt.Errorf("local = true benchmarks the machine Terraform runs on, which runs %s; pgbench-runner, huge pages "+
		"and the tuning it does need Linux. Run Terraform on a Linux machine, or use an ssh or ec2 block to reach a Linux host "+
		"from this one.", goos)
}

// ConfigValidators keeps the host kinds exclusive; an ec2 block joins the list.
func (r *hostResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(fwpath.MatchRoot("ssh"), fwpath.MatchRoot("local"), fwpath.MatchRoot("ec2")),
	}
}

func (r *hostResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var local types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, fwpath.Root("local"), &local)...)
	if !local.IsNull() && !local.IsUnknown() && !local.ValueBool() {
		resp.Diagnostics.AddAttributeError(fwpath.Root("local"), "Invalid Local Host",
			"local is false. Set local = true to use the machine Terraform runs on, or remove it and add an ssh block.")
	}
	if local.ValueBool() {
		if err := localHostSupported(runtime.GOOS); err != nil {
			resp.Diagnostics.AddAttributeError(fwpath.Root("local"), "Local Host Not Supported", err.Error())
		}
	}
	var tuning types.Object
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, fwpath.Root("tuning"), &tuning)...)
	if !tuning.IsNull() && !tuning.IsUnknown() {
		set := false
		for _, k := range tuningKnobs {
			if v, ok := tuning.Attributes()[k.attr]; ok && !v.IsNull() {
				set = true
			}
		}
		if !set {
			resp.Diagnostics.AddAttributeError(fwpath.Root("tuning"), "Empty Tuning Block",
				"The tuning block sets no knob. Set at least one of numa_balancing, cpu_governor, transparent_hugepages, or remove the block.")
		}
	}
}

func (r *hostResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m hostModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, _ := hostContext(ctx, &m, true, &resp.Diagnostics)
	defer cancel()
	if m.EC2 != nil {
		// The launch journal entry goes when this Create returns its
		// state; only a killed apply leaves it for the next one.
		j := claimEC2Launch(&m, &resp.Diagnostics)
		defer j.release(ctx)
		if !r.ec2Create(ctx, &m, j, &resp.State, &resp.Diagnostics) {
			return
		}
	}
	if r.setUp(ctx, &m, resp.Private, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// privateSetter is the private state of a create or an update.
type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// setUp installs the runner on a new host (or an adopted EC2 instance),
// bootstraps and tunes it as configured, and reads its facts into m. On
// an error it takes back what it did and reports false.
func (r *hostResource) setUp(ctx context.Context, m *hostModel, private privateSetter, diags *diag.Diagnostics) bool {
	ex, err := m.connection().dial(ctx)
	if err != nil {
		diags.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to %s failed: %v. Check the address, key and pinned host key.", m.describe(), err))
		return false
	}
	defer ex.Close()

	dir := m.InstallDir.ValueString()
	in, err := runnerbin.Install(ctx, ex, r.data.runner.binary, dir)
	if err != nil {
		diags.AddError("Runner Installation Failed", fmt.Sprintf("Installing pgbench-runner (%s) into %s on %s failed: %v", r.data.runner.describe, dir, ex, err))
		return false
	}
	// A directory holding our tuning state file is ours too: a host whose
	// runner vanished is re-created into the directory its first Create made.
	created := in.NewDir || in.TuneState
	if created {
		diags.Append(private.SetKey(ctx, privateCreatedDir, []byte("true"))...)
	}
	tflog.Info(ctx, "installed pgbench-runner", map[string]any{"host": ex.String(), "path": in.Path, "version": in.Version, "skipped": in.Skipped})
	rc := runnerclient.New(ex, in.Path)
	// undo takes back what this Create did (tune apply records the previous
	// values before writing, so a half-applied tuning is reverted too) and
	// says how that went. Campaigns in the directory are not this Create's.
	undo := func() string {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if err := rc.Run(cctx, nil, uninstallArgs(dir, created, true)...); err != nil {
			return fmt.Sprintf(" Undoing the install also failed: %v; previous values of any tuning are in %s.", err, runnerclient.TuneStatePath(dir))
		}
		return " Anything applied was reverted."
	}

	m.BootstrapInstalled = types.ListNull(types.StringType)
	if m.Bootstrap != nil {
		installed, err := bootstrap(ctx, rc, listStrings(ctx, m.Bootstrap.Packages))
		if err != nil {
			diags.AddAttributeError(fwpath.Root("bootstrap").AtName("packages"), "Package Installation Failed",
				fmt.Sprintf("Installing packages on %s failed: %v. Check the package names and that the host's package manager works.%s", ex, err, undo()))
			return false
		}
		m.BootstrapInstalled = stringList(installed)
	}
	m.TuningApplied = types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes})
	if m.Tuning != nil {
		applied, err := applyTuning(ctx, rc, dir, m.Tuning)
		if err != nil {
			diags.AddAttributeError(fwpath.Root("tuning"), "Tuning Failed", fmt.Sprintf("pgbench-runner tune apply on %s failed: %v.%s", ex, err, undo()))
			return false
		}
		m.TuningApplied = applied
	}
	if err := m.refresh(ctx, ex, in.Path, in.Version); err != nil {
		diags.AddError("Host Facts Unavailable", fmt.Sprintf("Reading facts of %s failed: %v.%s", ex, err, undo()))
		return false
	}
	m.RunnerSHA256 = types.StringValue(in.SHA256)
	return !diags.HasError()
}

func (r *hostResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m hostModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.EC2 != nil {
		r.ec2Read(ctx, &m, resp)
		return
	}
	if m.SSH != nil && m.SSH.PrivateKey.ValueString() == "" && !m.SSH.Agent.ValueBool() {
		// Imported SSH host: the key comes from configuration on the next
		// apply; until then there is no way in.
		tflog.Warn(ctx, "pgbench_host has no private key in state yet; facts are refreshed after the next apply", map[string]any{"id": m.ID.ValueString()})
		return
	}
	ex, err := m.connection().dial(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Reach Host", fmt.Sprintf("Refreshing %s failed: %v. If the host is gone for good, remove it with `terraform state rm`.", m.describe(), err))
		return
	}
	defer ex.Close()
	runner := runnerclient.BinaryPath(m.InstallDir.ValueString())
	v, err := runnerbin.RunnerVersion(ctx, ex, runner)
	if errors.Is(err, runnerclient.ErrNotInstalled) {
		resp.Diagnostics.AddWarning("Runner Missing",
			fmt.Sprintf("%s no longer exists on %s; the host is removed from state and the next apply installs it again.", runner, ex))
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Runner Not Working", fmt.Sprintf("On %s: %v", ex, err))
		return
	}
	if err := m.refresh(ctx, ex, runner, v); err != nil {
		resp.Diagnostics.AddError("Host Facts Unavailable", fmt.Sprintf("Reading facts of %s failed: %v", ex, err))
		return
	}
	if m.BootstrapInstalled.IsUnknown() {
		m.BootstrapInstalled = types.ListNull(types.StringType)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// ModifyPlan plans connection_info and id of an in-place update from the
// configuration, so that the resources on the host see a known connection
// and are replaced only when it names another host.
func (r *hostResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	r.planEC2Tags(ctx, &resp.Plan, &resp.Diagnostics)
	planEC2Import(ctx, req, resp)
	if req.State.Raw.IsNull() && hasEC2Block(ctx, req.Plan) {
		r.planEC2Account(ctx, &resp.Plan, &resp.Diagnostics)
	}
	if req.State.Raw.IsNull() || len(resp.RequiresReplace) > 0 || resp.Diagnostics.HasError() {
		return
	}
	var m, prior hostModel
	resp.Diagnostics.Append(resp.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	was, err := connectionFromObject(ctx, prior.Connection)
	if err != nil {
		return // an imported host: facts and connection come with the update
	}
	if m.EC2 == nil {
		m.ID = types.StringValue(m.hostID())
	}
	c := m.connection()
	c.RunnerPath, c.HostID = was.RunnerPath, m.ID
	obj, err := c.objectValue(ctx)
	if err != nil || obj.IsUnknown() {
		return
	}
	for _, v := range obj.Attributes() {
		if v.IsUnknown() {
			return
		}
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, fwpath.Root("id"), m.ID)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, fwpath.Root("connection_info"), obj)...)
}

// Update logs in with the new user, port, credentials or jump host and
// only then records them; a key the host refuses fails the update with the
// host's answer and leaves the old, working values in state (so the next
// plan shows the change again). An imported host's keys are filled in
// here too.
func (r *hostResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior hostModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Whatever fails below, state keeps what worked before.
	resp.State.Raw = req.State.Raw.Copy()
	if m.EC2 != nil && !m.EC2.TagsAll.Equal(prior.EC2.TagsAll) && !r.ec2UpdateTags(ctx, &m, &prior, &resp.State, &resp.Diagnostics) {
		return
	}
	if m.EC2 != nil && ec2Imported(ctx, req.Private) {
		if r.ec2Adopt(ctx, &m, &resp.State, &resp.Diagnostics) && r.setUp(ctx, &m, resp.Private, &resp.Diagnostics) {
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
			resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateEC2Imported, nil)...)
		}
		return
	}
	ex, err := m.connection().dial(ctx)
	if err != nil {
		at, what := m.credentialsPath()
		resp.Diagnostics.AddAttributeError(at, "Cannot Log In With New Settings", fmt.Sprintf("Connecting to %s with the new %s failed: %v. "+
			"The state keeps the previous settings, which still work; fix the new ones (is the key in the host's authorized_keys, "+
			"is the agent running with the key added?) and apply again.", m.describe(), what, err))
		return
	}
	defer ex.Close()
	in, err := runnerbin.Install(ctx, ex, r.data.runner.binary, m.InstallDir.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Runner Installation Failed", fmt.Sprintf("Installing pgbench-runner into %s on %s failed: %v", m.InstallDir.ValueString(), ex, err))
		return
	}
	if err := m.refresh(ctx, ex, in.Path, in.Version); err != nil {
		resp.Diagnostics.AddError("Host Facts Unavailable", fmt.Sprintf("Reading facts of %s failed: %v", ex, err))
		return
	}
	m.RunnerSHA256 = types.StringValue(in.SHA256)
	m.TuningApplied = prior.TuningApplied
	if m.BootstrapInstalled.IsUnknown() {
		m.BootstrapInstalled = prior.BootstrapInstalled
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// credentialsPath is the attribute a failed login with new settings is
// reported on, and what those settings are called.
func (m *hostModel) credentialsPath() (fwpath.Path, string) {
	switch {
	case m.EC2 != nil:
		return fwpath.Root("ec2"), "settings"
	case m.SSH == nil:
		return fwpath.Root("local"), "settings"
	case m.SSH.Agent.ValueBool():
		return fwpath.Root("ssh").AtName("agent"), "ssh-agent credentials"
	default:
		return fwpath.Root("ssh").AtName("private_key"), "credentials"
	}
}

func (r *hostResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m hostModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel, timeout := hostContext(ctx, &m, false, &resp.Diagnostics)
	defer cancel()
	if m.EC2 != nil {
		// Termination reverts everything; nothing on the host needs undoing.
		r.ec2Delete(ctx, m.EC2, &resp.Diagnostics)
		return
	}
	ex, err := m.connection().dial(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to %s to revert its tuning failed: %v.%s "+
			"Retry the destroy once the host is reachable, or remove it with `terraform state rm` and revert by hand.", m.describe(), err, deleteTimedOut(ctx, timeout)))
		return
	}
	defer ex.Close()
	dir := m.InstallDir.ValueString()
	created, diags := req.Private.GetKey(ctx, privateCreatedDir)
	resp.Diagnostics.Append(diags...)
	var res runnerclient.Uninstalled
	err = runnerclient.New(ex, runnerclient.BinaryPath(dir)).Run(ctx, &res, uninstallArgs(dir, string(created) == "true", false)...)
	switch {
	case errors.Is(err, runnerclient.ErrNotInstalled):
		resp.Diagnostics.AddWarning("Runner Missing", fmt.Sprintf("%s is no longer on %s, so destroy could not revert the tuning or remove "+
			"the data of unfinished campaigns; the host is removed from state anyway. If %s is still there, it holds the previous values "+
			"to restore by hand; campaign data directories may remain under %s.", runnerclient.BinaryPath(dir), ex,
			runnerclient.TuneStatePath(dir), campaign.Root(dir)))
		return
	case err != nil:
		resp.Diagnostics.AddError("Host Uninstall Failed", fmt.Sprintf("pgbench-runner uninstall on %s failed: %v.%s "+
			"The runner stays until it succeeds, with the previous values of any tuning in %s; destroy again to retry.",
			ex, err, deleteTimedOut(ctx, timeout), runnerclient.TuneStatePath(dir)))
		return
	}
	for _, w := range res.Warnings {
		resp.Diagnostics.AddWarning("Host Not Fully Cleaned", w+".")
	}
	tflog.Info(ctx, "uninstalled pgbench-runner", map[string]any{"host": ex.String(), "tuning_reverted": res.TuningReverted,
		"campaigns_cleaned": len(res.Campaigns), "dir_removed": res.DirRemoved, "dir_kept": res.DirKept})
}

// ImportState takes `local`, `user@host:port` or an EC2 instance id
// (host_ec2_import.go), each optionally followed by `,INSTALL_DIR` when the
// runner is not in the default directory.
func (r *hostResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	id, dir, _ := strings.Cut(req.ID, ",")
	if dir == "" {
		dir = runnerbin.DefaultDir
	}
	if !hostAbsPath.MatchString(dir) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("install directory %q in import ID %q is not an absolute path", dir, req.ID))
		return
	}
	if ec2InstanceIDPattern.MatchString(id) {
		ec2ImportState(ctx, id, dir, resp)
		return
	}
	m := hostModel{
		InstallDir:         types.StringValue(dir),
		Connection:         types.ObjectNull(connectionAttrTypes),
		HugepageSizes:      types.ListNull(types.Int64Type),
		TuningApplied:      types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes}),
		BootstrapInstalled: types.ListNull(types.StringType),
		Timeouts:           hostTimeoutsNull(),
	}
	if id == "local" {
		m.Local = types.BoolValue(true)
	} else {
		ssh, err := parseSSHImportID(id)
		if err != nil {
			resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("import ID %q: %v; want local or user@host:port[,install_dir]", req.ID, err))
			return
		}
		m.SSH = ssh
	}
	m.ID = types.StringValue(m.hostID())
	m.nullFacts()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// privateCreatedDir marks, in private state, an install directory this
// resource made, which destroy removes.
const privateCreatedDir = "created_install_dir"

// uninstallArgs is the `pgbench-runner uninstall` command line: the
// directory goes too when this resource made it; keepCampaigns leaves
// campaign data alone (undoing a failed Create).
func uninstallArgs(dir string, createdDir, keepCampaigns bool) []string {
	args := []string{"uninstall", "--dir", dir}
	if createdDir {
		args = append(args, "--remove-dir")
	}
	if keepCampaigns {
		args = append(args, "--keep-campaigns")
	}
	return args
}

// bootstrap installs the missing ones of pkgs with `pgbench-runner
// bootstrap` and returns them.
func bootstrap(ctx context.Context, rc runnerclient.Client, pkgs []string) ([]string, error) {
	if len(pkgs) == 0 {
		return []string{}, nil
	}
	rc.OnStderr = func(l string) { tflog.Info(ctx, l) }
	var res pkgmgr.Result
	if err := rc.Run(ctx, &res, "bootstrap", "--packages", strings.Join(pkgs, ",")); err != nil {
		return nil, err
	}
	tflog.Info(ctx, "bootstrapped packages", map[string]any{"manager": res.Manager, "installed": res.Installed, "present": res.Present})
	return res.Installed, nil
}

// hostContext bounds a create or delete by the timeouts block, and returns
// the bound for messages.
func hostContext(ctx context.Context, m *hostModel, create bool, diags *diag.Diagnostics) (context.Context, context.CancelFunc, time.Duration) {
	get := m.Timeouts.Delete
	if create {
		get = m.Timeouts.Create
	}
	d, ds := get(ctx, defaultHostTimeout)
	diags.Append(ds...)
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, d
}

// deleteTimedOut says so when ctx ran out of the delete timeout d.
func deleteTimedOut(ctx context.Context, d time.Duration) string {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ""
	}
	return fmt.Sprintf(" The delete timeout (%s) expired; raise timeouts.delete if the host needs longer.", d)
}

// hostTimeoutsNull is the null timeouts block, for states built by hand.
func hostTimeoutsNull() timeouts.Value {
	return timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "delete": types.StringType})}
}

// refresh sets the facts, the connection and the runner version.
func (m *hostModel) refresh(ctx context.Context, ex remote.Executor, runner, version string) error {
	var in sysinfo.Info
	if err := runnerclient.New(ex, runner).Run(ctx, &in, "sysinfo"); err != nil {
		return err
	}
	m.ID = types.StringValue(m.hostID())
	m.RunnerVersion = types.StringValue(version)
	m.CPUs = types.Int64Value(int64(in.CPUs))
	m.NUMANodes = types.Int64Value(int64(len(in.NUMANodes)))
	m.MemoryBytes = types.Int64Value(in.MemoryTotalBytes)
	m.CPUModel = types.StringValue(in.CPUModel)
	m.Kernel = types.StringValue(in.Kernel)
	sizes := []attr.Value{}
	for _, p := range in.HugePages {
		sizes = append(sizes, types.Int64Value(p.SizeBytes))
	}
	m.HugepageSizes = types.ListValueMust(types.Int64Type, sizes)
	c := m.connection()
	c.RunnerPath = types.StringValue(runner)
	c.HostID = m.ID
	obj, err := c.objectValue(ctx)
	if err != nil {
		return err
	}
	m.Connection = obj
	return nil
}

type hostModel struct {
	ID                 types.String    `tfsdk:"id"`
	Local              types.Bool      `tfsdk:"local"`
	SSH                *sshModel       `tfsdk:"ssh"`
	InstallDir         types.String    `tfsdk:"install_dir"`
	Bootstrap          *bootstrapModel `tfsdk:"bootstrap"`
	Tuning             *tuningModel    `tfsdk:"tuning"`
	RunnerVersion      types.String    `tfsdk:"runner_version"`
	RunnerSHA256       types.String    `tfsdk:"runner_sha256"`
	Connection         types.Object    `tfsdk:"connection_info"`
	CPUs               types.Int64     `tfsdk:"cpus"`
	NUMANodes          types.Int64     `tfsdk:"numa_nodes"`
	MemoryBytes        types.Int64     `tfsdk:"memory_bytes"`
	CPUModel           types.String    `tfsdk:"cpu_model"`
	Kernel             types.String    `tfsdk:"kernel"`
	HugepageSizes      types.List      `tfsdk:"hugepage_sizes"`
	TuningApplied      types.Map       `tfsdk:"tuning_applied"`
	BootstrapInstalled types.List      `tfsdk:"bootstrap_installed"`
	EC2                *ec2Model       `tfsdk:"ec2"`
	Timeouts           timeouts.Value  `tfsdk:"timeouts"`
}

type bootstrapModel struct {
	Packages types.List `tfsdk:"packages"`
}

func (m *hostModel) hostID() string {
	if m.EC2 != nil {
		return m.EC2.InstanceID.ValueString()
	}
	if m.SSH == nil {
		return "local"
	}
	return fmt.Sprintf("%s@%s:%d", m.SSH.User.ValueString(), m.SSH.Host.ValueString(), m.SSH.Port.ValueInt64())
}

func (m *hostModel) describe() string {
	if m.EC2 != nil {
		return "ec2 instance " + m.EC2.InstanceID.ValueString()
	}
	if m.SSH == nil {
		return "the local machine"
	}
	return "ssh " + m.hostID()
}

// connection is the connection_info of this host.
func (m *hostModel) connection() connectionModel {
	if m.EC2 != nil {
		return m.EC2.connection(m.InstallDir.ValueString(), m.ID)
	}
	c := connectionModel{
		Mode: types.StringValue("local"), Host: types.StringNull(), Port: types.Int64Null(), User: types.StringNull(),
		PrivateKey: types.StringNull(), HostKey: types.StringNull(), Agent: types.BoolNull(),
		BastionHost: types.StringNull(), BastionPort: types.Int64Null(), BastionUser: types.StringNull(),
		BastionPrivateKey: types.StringNull(), BastionHostKey: types.StringNull(), BastionAgent: types.BoolNull(),
		RunnerPath: types.StringValue(runnerclient.BinaryPath(m.InstallDir.ValueString())), HostID: m.ID,
	}
	if s := m.SSH; s != nil {
		c.Mode = types.StringValue("ssh")
		c.Host, c.Port, c.User, c.PrivateKey, c.HostKey, c.Agent = s.Host, s.Port, s.User, s.PrivateKey, s.HostKey, s.Agent
		if b := s.Bastion; b != nil {
			c.BastionHost, c.BastionPort, c.BastionUser, c.BastionPrivateKey, c.BastionHostKey, c.BastionAgent = b.Host, b.Port, b.User, b.PrivateKey, b.HostKey, b.Agent
		}
	}
	return c
}

func (m *hostModel) nullFacts() {
	m.RunnerVersion, m.RunnerSHA256 = types.StringNull(), types.StringNull()
	m.CPUs, m.NUMANodes, m.MemoryBytes = types.Int64Null(), types.Int64Null(), types.Int64Null()
	m.CPUModel, m.Kernel = types.StringNull(), types.StringNull()
}

var (
	hostAbsPath      = regexp.MustCompile(`^/[^\x00]*$`)
	hostGovernorName = regexp.MustCompile(`^[a-z0-9_]+$`)
)
