package provider

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tune"
)

var (
	_ resource.ResourceWithImportState      = (*hostResource)(nil)
	_ resource.ResourceWithConfigValidators = (*hostResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*hostResource)(nil)
	_ resource.ResourceWithConfigure        = (*hostResource)(nil)
)

// NewHostResource returns the pgbench_host resource.
func NewHostResource() resource.Resource { return &hostResource{} }

type hostResource struct {
	data *providerData
}

// tuningKnobs maps the tuning block's attribute names to the runner's knob
// names and flags.
var tuningKnobs = []struct{ attr, knob, flag string }{
	{"numa_balancing", tune.NUMABalancing, "--numa-balancing"},
	{"cpu_governor", tune.Governor, "--governor"},
	{"transparent_hugepages", tune.THP, "--thp"},
}

var tuningAppliedAttrTypes = map[string]attr.Type{
	"previous": types.StringType,
	"value":    types.StringType,
	"status":   types.StringType,
	"reason":   types.StringType,
}

func (r *hostResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host"
}

func (r *hostResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	// A key that was not known before (an imported host) can be filled in
	// without replacing the host; changing a known key replaces it.
	replaceIfKnown := []planmodifier.String{stringplanmodifier.RequiresReplaceIf(
		func(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
			resp.RequiresReplace = !req.StateValue.IsNull()
		}, "Replaces the host when a previously known key changes.", "Replaces the host when a previously known key changes.")}
	sshAttrs := func(what string) map[string]schema.Attribute {
		return map[string]schema.Attribute{
			"host": schema.StringAttribute{
				Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Address or name of the " + what + ". Required.",
			},
			"port": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(22),
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				MarkdownDescription: "SSH port of the " + what + ". Default `22`.",
			},
			"user": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("root"), PlanModifiers: replace,
				MarkdownDescription: "SSH user on the " + what + ". Default `root`; tuning and packages need root or passwordless sudo-less root access.",
			},
			"private_key": schema.StringAttribute{
				Optional: true, Sensitive: true, PlanModifiers: replaceIfKnown,
				MarkdownDescription: "Private key (PEM or OpenSSH format) to log in to the " + what + " with, e.g. `file(\"~/.ssh/id_ed25519\")`. Required.",
			},
			"host_key": schema.StringAttribute{
				Optional: true, PlanModifiers: replaceIfKnown,
				MarkdownDescription: "The " + what + "'s SSH host key, pinned: an `authorized_keys`-format line " +
					"(`ssh-ed25519 AAAA...`) or a `SHA256:` fingerprint. Connections to any other key are refused. Required.",
			},
		}
	}
	// Attributes of a single nested block cannot be Required without
	// making the block itself mandatory, so presence is checked here.
	sshRequired := []validator.Object{objectvalidator.AlsoRequires(
		fwpath.MatchRelative().AtName("host"), fwpath.MatchRelative().AtName("private_key"), fwpath.MatchRelative().AtName("host_key"))}
	bastion := sshAttrs("jump host")
	sshBlockAttrs := sshAttrs("host")
	resp.Schema = schema.Schema{
		MarkdownDescription: "A benchmark host: an EC2 instance it launches (`ec2` block, terminated on destroy), an existing machine reached over SSH (`ssh` block) or the machine " +
			"Terraform runs on (`local = true`). The provider installs `pgbench-runner` on it, optionally installs " +
			"packages and tunes the OS (recording the previous values), and exports its facts and a `connection` " +
			"object for the other resources.\n\n" +
			"Destroy reverts the tuning to the recorded previous values and removes the runner and its state files " +
			"from `install_dir`. Packages installed by `bootstrap` are kept on purpose: other software on the host " +
			"may depend on them; `bootstrap_installed` lists them so you can remove them yourself.\n\n" +
			"Every argument forces replacement (replacing reverts the old tuning before applying the new), except " +
			"filling in a key that an import could not know. If `pgbench-runner` has vanished from the host, refresh " +
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
			"connection_info": hostConnectionAttribute(),
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
			"ssh": schema.SingleNestedBlock{
				MarkdownDescription: "Reach an existing machine over SSH, with a pinned host key.",
				Attributes:          sshBlockAttrs,
				Validators:          sshRequired,
				Blocks: map[string]schema.Block{
					"bastion": schema.SingleNestedBlock{
						MarkdownDescription: "Optional jump host the connection goes through.",
						Attributes:          bastion,
						PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
						Validators:          sshRequired,
					},
				},
			},
			"bootstrap": schema.SingleNestedBlock{
				MarkdownDescription: "Packages to install with the host's package manager (apt-get, dnf or yum) when missing.",
				Attributes: map[string]schema.Attribute{
					"packages": schema.ListAttribute{
						ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Package names, e.g. `[\"postgresql\", \"numactl\"]`.",
						Validators:          []validator.List{packageNames{}},
					},
				},
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
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
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			},
		},
	}
}

func (r *hostResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected Provider Data", fmt.Sprintf("expected *providerData, got %T; this is a bug in the provider", req.ProviderData))
		return
	}
	r.data = data
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
	ctx, cancel := hostContext(ctx, &m, true, &resp.Diagnostics)
	defer cancel()
	if m.EC2 != nil && !r.ec2CreateHost(ctx, &m, resp) {
		return
	}
	conn := m.connection()
	ex, err := conn.dial(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to %s failed: %v. Check the address, key and pinned host key.", m.describe(), err))
		return
	}
	defer ex.Close()

	dir := m.InstallDir.ValueString()
	// A directory holding our tuning state file is ours too: a host whose
	// runner vanished is re-created into the directory its first Create made.
	created := !hostPathExists(ctx, ex, dir) || hostPathExists(ctx, ex, tuneStatePath(dir))
	if m.Bootstrap != nil {
		installed, err := bootstrapPackages(ctx, ex, m.Bootstrap.packages(ctx))
		if err != nil {
			resp.Diagnostics.AddAttributeError(fwpath.Root("bootstrap").AtName("packages"), "Package Installation Failed",
				fmt.Sprintf("Installing packages on %s failed: %v. Check the package names and that the host's package manager works.", ex, err))
			return
		}
		m.BootstrapInstalled = hostStringList(installed)
	} else {
		m.BootstrapInstalled = types.ListNull(types.StringType)
	}
	in, err := runnerbin.Install(ctx, ex, r.data.runner.binary, dir)
	if err != nil {
		resp.Diagnostics.AddError("Runner Installation Failed", fmt.Sprintf("Installing pgbench-runner (%s) into %s on %s failed: %v", r.data.runner.describe, dir, ex, err))
		return
	}
	if created {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateCreatedDir, []byte("true"))...)
	}
	tflog.Info(ctx, "installed pgbench-runner", map[string]any{"host": ex.String(), "path": in.Path, "version": in.Version, "skipped": in.Skipped})

	m.TuningApplied = types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes})
	if m.Tuning != nil {
		applied, err := applyTuning(ctx, ex, in.Path, dir, m.Tuning)
		if err != nil {
			// tune apply records previous values before writing, so a
			// half-applied tuning is reverted from the same state file.
			revertErr := revertTuning(ctx, ex, in.Path, dir)
			detail := fmt.Sprintf("pgbench-runner tune apply on %s failed: %v.", ex, err)
			if revertErr != nil {
				detail += fmt.Sprintf(" Reverting what was applied also failed: %v; the previous values are in %s.", revertErr, tuneStatePath(dir))
			} else {
				detail += " Anything applied was reverted."
			}
			resp.Diagnostics.AddAttributeError(fwpath.Root("tuning"), "Tuning Failed", detail)
			r.cleanupRunner(ctx, ex, dir, created)
			return
		}
		m.TuningApplied = applied
	}
	if err := m.refresh(ctx, ex, in.Path, in.Version); err != nil {
		detail := fmt.Sprintf("Reading facts of %s failed: %v.", ex, err)
		if m.Tuning != nil {
			if rerr := revertTuning(ctx, ex, in.Path, dir); rerr != nil {
				detail += fmt.Sprintf(" Reverting the tuning also failed: %v; the previous values are in %s.", rerr, tuneStatePath(dir))
			} else {
				detail += " The tuning was reverted."
			}
		}
		resp.Diagnostics.AddError("Host Facts Unavailable", detail)
		r.cleanupRunner(ctx, ex, dir, created)
		return
	}
	m.RunnerSHA256 = types.StringValue(in.SHA256)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *hostResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m hostModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.EC2 != nil {
		r.ec2ReadHost(ctx, &m, resp)
		return
	}
	if m.SSH != nil && m.SSH.PrivateKey.ValueString() == "" {
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
	runner := path.Join(m.InstallDir.ValueString(), "pgbench-runner")
	v, err := runnerbin.RunnerVersion(ctx, ex, runner)
	if err != nil {
		if !hostPathExists(ctx, ex, runner) {
			resp.Diagnostics.AddWarning("Runner Missing",
				fmt.Sprintf("%s no longer exists on %s; the host is removed from state and the next apply installs it again.", runner, ex))
			resp.State.RemoveResource(ctx)
			return
		}
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

// Update only happens when a key that state did not know (after an import)
// is filled in from configuration: everything else forces replacement.
func (r *hostResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior hostModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ex, err := m.connection().dial(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to %s failed: %v. Check the address, key and pinned host key.", m.describe(), err))
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

func (r *hostResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m hostModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.EC2 != nil {
		// Termination reverts everything; nothing on the host needs undoing.
		ctx, cancel := hostContext(ctx, &m, false, &resp.Diagnostics)
		defer cancel()
		r.ec2Delete(ctx, m.EC2, &resp.Diagnostics)
		return
	}
	ex, err := m.connection().dial(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Reach Host", fmt.Sprintf("Connecting to %s to revert its tuning failed: %v. "+
			"Retry the destroy once the host is reachable, or remove it with `terraform state rm` and revert by hand.", m.describe(), err))
		return
	}
	defer ex.Close()
	dir := m.InstallDir.ValueString()
	runner := path.Join(dir, "pgbench-runner")
	if hostPathExists(ctx, ex, tuneStatePath(dir)) {
		if err := revertTuning(ctx, ex, runner, dir); err != nil {
			resp.Diagnostics.AddError("Tuning Revert Failed", fmt.Sprintf("pgbench-runner tune revert on %s failed: %v. "+
				"The previous values are still in %s; destroy again to retry.", ex, err, tuneStatePath(dir)))
			return
		}
	}
	// Campaigns that never finished were never in any state, so no
	// pgbench_ab_benchmark destroy removes their data directories (tens of
	// GB at scale 3000) or stops a server a killed runner left behind.
	for _, w := range removeCampaignData(ctx, ex, runner, path.Join(dir, "campaigns")) {
		resp.Diagnostics.AddWarning("Campaign Data Left On Host", w)
	}
	created, diags := req.Private.GetKey(ctx, privateCreatedDir)
	resp.Diagnostics.Append(diags...)
	r.cleanupRunner(ctx, ex, dir, string(created) == "true")
}

// removeCampaignData runs `pgbench-runner ab --remove-data` for every
// campaign directory under root that holds a journal, keeping the reports.
// It returns what it could not remove, as warnings.
func removeCampaignData(ctx context.Context, ex remote.Executor, runner, root string) []string {
	res, err := ex.Run(ctx, remote.Command{Args: []string{"find", root, "-mindepth", "2", "-maxdepth", "2", "-name", "journal.jsonl"}})
	if err != nil {
		return nil // no campaigns directory: nothing to remove
	}
	var warnings []string
	for _, j := range strings.Fields(string(res.Stdout)) {
		d := path.Dir(j)
		if err := runRunner(ctx, ex, runner, nil, nil, "ab", "--out", d, "--remove-data"); err != nil {
			warnings = append(warnings, fmt.Sprintf("Removing the data directories of the campaign in %s failed: %v. Remove them by hand.", d, err))
		}
	}
	return warnings
}

// ImportState takes `local` or `user@host:port`, each optionally followed by
// `,INSTALL_DIR` when the runner is not in the default directory.
func (r *hostResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if ec2RefuseImport(req.ID, &resp.Diagnostics) {
		return
	}
	id, dir, _ := strings.Cut(req.ID, ",")
	if dir == "" {
		dir = runnerbin.DefaultDir
	}
	if !hostAbsPath.MatchString(dir) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("install directory %q in import ID %q is not an absolute path", dir, req.ID))
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
		user, hostPort, ok := strings.Cut(id, "@")
		if !ok {
			user, hostPort = "root", id
		}
		host, portStr, ok := strings.Cut(hostPort, ":")
		port := int64(22)
		if ok {
			p, err := strconv.ParseInt(portStr, 10, 64)
			if err != nil || p < 1 || p > 65535 {
				resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("port %q in import ID %q is not a port number; want local or user@host:port[,install_dir]", portStr, req.ID))
				return
			}
			port = p
		}
		if host == "" || user == "" {
			resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("import ID %q: want local or user@host:port[,install_dir]", req.ID))
			return
		}
		m.SSH = &sshModel{Host: types.StringValue(host), Port: types.Int64Value(port), User: types.StringValue(user),
			PrivateKey: types.StringNull(), HostKey: types.StringNull()}
	}
	m.ID = types.StringValue(m.hostID())
	m.nullFacts()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

const privateCreatedDir = "created_install_dir"

// hostConnectionAttribute is the exported connection object. It cannot be
// called `connection`: Terraform reserves that name for provisioner
// connection blocks in every resource.
func hostConnectionAttribute() schema.SingleNestedAttribute {
	a := connectionOutputAttribute()
	a.MarkdownDescription = "Everything the other resources need to work on this host (sensitive: it holds the keys). " +
		"Pass it whole to their `host_connection` argument: `host_connection = pgbench_host.<name>.connection_info`."
	return a
}

func tuneStatePath(dir string) string { return path.Join(dir, "tune-state.json") }

// cleanupRunner removes what Create installed; the directory only when this
// resource created it and it is empty (rmdir refuses otherwise).
func (r *hostResource) cleanupRunner(ctx context.Context, ex remote.Executor, dir string, createdDir bool) {
	if _, err := ex.Run(ctx, remote.Command{Args: []string{"rm", "-f", "--", path.Join(dir, "pgbench-runner"), tuneStatePath(dir)}}); err != nil {
		tflog.Warn(ctx, "could not remove pgbench-runner", map[string]any{"host": ex.String(), "error": err.Error()})
	}
	if createdDir {
		if _, err := ex.Run(ctx, remote.Command{Args: []string{"rmdir", "--", dir}}); err != nil {
			tflog.Info(ctx, "install directory left in place", map[string]any{"dir": dir, "error": err.Error()})
		}
	}
}

func hostPathExists(ctx context.Context, ex remote.Executor, p string) bool {
	_, err := ex.Run(ctx, remote.Command{Args: []string{"test", "-e", p}})
	return err == nil
}

func applyTuning(ctx context.Context, ex remote.Executor, runner, dir string, t *tuningModel) (types.Map, error) {
	null := types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes})
	args := []string{"tune", "apply", "--state", tuneStatePath(dir)}
	vals := t.values()
	for _, k := range tuningKnobs {
		if v, ok := vals[k.attr]; ok {
			args = append(args, k.flag, v)
		}
	}
	if t.Strict.ValueBool() {
		args = append(args, "--strict")
	}
	var res tune.Result
	if err := runRunner(ctx, ex, runner, &res, nil, args...); err != nil {
		return null, err
	}
	byKnob := map[string]tune.Change{}
	for _, ch := range res.Changes {
		byKnob[ch.Knob] = ch
	}
	out := map[string]attr.Value{}
	for _, k := range tuningKnobs {
		if _, ok := vals[k.attr]; !ok {
			continue
		}
		ch, ok := byKnob[k.knob]
		if !ok {
			return null, fmt.Errorf("tune apply reported nothing for %s", k.knob)
		}
		tflog.Info(ctx, "tuned", map[string]any{"knob": k.attr, "previous": ch.Previous, "value": ch.Value, "status": ch.Status})
		obj, diags := types.ObjectValue(tuningAppliedAttrTypes, map[string]attr.Value{
			"previous": hostOptString(ch.Previous), "value": hostOptString(ch.Value),
			"status": types.StringValue(ch.Status), "reason": hostOptString(ch.Reason),
		})
		if diags.HasError() {
			return null, fmt.Errorf("record tuning of %s: %v", k.knob, diags)
		}
		out[k.attr] = obj
	}
	m, diags := types.MapValue(types.ObjectType{AttrTypes: tuningAppliedAttrTypes}, out)
	if diags.HasError() {
		return null, fmt.Errorf("record tuning: %v", diags)
	}
	return m, nil
}

// revertTuning is idempotent: without a state file there is nothing to do.
func revertTuning(ctx context.Context, ex remote.Executor, runner, dir string) error {
	var res tune.Result
	if err := runRunner(ctx, ex, runner, &res, nil, "tune", "revert", "--state", tuneStatePath(dir)); err != nil {
		return err
	}
	for _, ch := range res.Changes {
		tflog.Info(ctx, "reverted tuning", map[string]any{"knob": ch.Knob, "value": ch.Value, "status": ch.Status})
	}
	return nil
}

// bootstrapPackages installs the missing ones of pkgs and returns those.
func bootstrapPackages(ctx context.Context, ex remote.Executor, pkgs []string) ([]string, error) {
	if len(pkgs) == 0 {
		return []string{}, nil
	}
	res, err := ex.Run(ctx, remote.Command{Args: []string{"sh", "-c", "command -v apt-get || command -v dnf || command -v yum"}})
	if err != nil {
		return nil, errors.New("no supported package manager (apt-get, dnf, yum) found")
	}
	pm := path.Base(strings.TrimSpace(strings.SplitN(string(res.Stdout), "\n", 2)[0]))
	var missing []string
	for _, p := range pkgs {
		var check []string
		if pm == "apt-get" {
			check = []string{"dpkg-query", "-W", "-f=${Status}", p}
		} else {
			check = []string{"rpm", "-q", "--whatprovides", p}
		}
		r, err := ex.Run(ctx, remote.Command{Args: check})
		if err == nil && (pm != "apt-get" || strings.Contains(string(r.Stdout), "install ok installed")) {
			continue
		}
		missing = append(missing, p)
	}
	if len(missing) == 0 {
		return []string{}, nil
	}
	tflog.Info(ctx, "installing packages", map[string]any{"host": ex.String(), "manager": pm, "packages": missing})
	env := map[string]string{"DEBIAN_FRONTEND": "noninteractive"}
	install := append([]string{pm, "install", "-y"}, missing...)
	if _, err := ex.Run(ctx, remote.Command{Args: install, Env: env}); err != nil {
		if pm != "apt-get" {
			return nil, fmt.Errorf("%s: %w", strings.Join(install, " "), err)
		}
		// A fresh machine often has no package lists yet.
		if _, uerr := ex.Run(ctx, remote.Command{Args: []string{"apt-get", "update"}, Env: env}); uerr != nil {
			return nil, fmt.Errorf("apt-get update: %w", uerr)
		}
		if _, err := ex.Run(ctx, remote.Command{Args: install, Env: env}); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(install, " "), err)
		}
	}
	return missing, nil
}

// refresh sets the facts, the connection and the runner version.
func (m *hostModel) refresh(ctx context.Context, ex remote.Executor, runner, version string) error {
	var in sysinfo.Info
	if err := runRunner(ctx, ex, runner, &in, nil, "sysinfo"); err != nil {
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

func hostOptString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func hostStringList(ss []string) types.List {
	vs := make([]attr.Value, len(ss))
	for i, s := range ss {
		vs[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vs)
}

// packageNames refuses names a package manager would take as options.
type packageNames struct{}

func (packageNames) Description(context.Context) string {
	return "package names must not be empty or start with -"
}
func (v packageNames) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (packageNames) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() {
			continue
		}
		if s.IsNull() || s.ValueString() == "" || strings.HasPrefix(s.ValueString(), "-") || strings.ContainsAny(s.ValueString(), " \t\n") {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i), "Invalid Package Name",
				fmt.Sprintf("%q is not a package name: it must be non-empty, contain no whitespace and not start with -.", s.ValueString()))
		}
	}
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

type sshModel struct {
	Host       types.String  `tfsdk:"host"`
	Port       types.Int64   `tfsdk:"port"`
	User       types.String  `tfsdk:"user"`
	PrivateKey types.String  `tfsdk:"private_key"`
	HostKey    types.String  `tfsdk:"host_key"`
	Bastion    *bastionModel `tfsdk:"bastion"`
}

type bastionModel struct {
	Host       types.String `tfsdk:"host"`
	Port       types.Int64  `tfsdk:"port"`
	User       types.String `tfsdk:"user"`
	PrivateKey types.String `tfsdk:"private_key"`
	HostKey    types.String `tfsdk:"host_key"`
}

type bootstrapModel struct {
	Packages types.List `tfsdk:"packages"`
}

func (b *bootstrapModel) packages(ctx context.Context) []string {
	var ps []string
	b.Packages.ElementsAs(ctx, &ps, false)
	return ps
}

type tuningModel struct {
	NUMABalancing        types.String `tfsdk:"numa_balancing"`
	CPUGovernor          types.String `tfsdk:"cpu_governor"`
	TransparentHugepages types.String `tfsdk:"transparent_hugepages"`
	Strict               types.Bool   `tfsdk:"strict"`
}

// values returns the set knobs by attribute name.
func (t *tuningModel) values() map[string]string {
	out := map[string]string{}
	for name, v := range map[string]types.String{
		"numa_balancing": t.NUMABalancing, "cpu_governor": t.CPUGovernor, "transparent_hugepages": t.TransparentHugepages,
	} {
		if !v.IsNull() && !v.IsUnknown() {
			out[name] = v.ValueString()
		}
	}
	return out
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

// connection is the connectionModel for this host, without runner_path.
func (m *hostModel) connection() connectionModel {
	if m.EC2 != nil {
		return m.EC2.connection(m.InstallDir.ValueString(), m.ID)
	}
	c := connectionModel{
		Mode: types.StringValue("local"), Host: types.StringNull(), Port: types.Int64Null(), User: types.StringNull(),
		PrivateKey: types.StringNull(), HostKey: types.StringNull(),
		BastionHost: types.StringNull(), BastionPort: types.Int64Null(), BastionUser: types.StringNull(),
		BastionPrivateKey: types.StringNull(), BastionHostKey: types.StringNull(),
		RunnerPath: types.StringValue(path.Join(m.InstallDir.ValueString(), "pgbench-runner")), HostID: m.ID,
	}
	if s := m.SSH; s != nil {
		c.Mode = types.StringValue("ssh")
		c.Host, c.Port, c.User, c.PrivateKey, c.HostKey = s.Host, s.Port, s.User, s.PrivateKey, s.HostKey
		if b := s.Bastion; b != nil {
			c.BastionHost, c.BastionPort, c.BastionUser, c.BastionPrivateKey, c.BastionHostKey = b.Host, b.Port, b.User, b.PrivateKey, b.HostKey
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
