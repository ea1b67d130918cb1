package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

var (
	_ resource.ResourceWithConfigure      = (*postgresBuildResource)(nil)
	_ resource.ResourceWithValidateConfig = (*postgresBuildResource)(nil)
)

// NewPostgresBuildResource is the constructor of pgbench_postgres_build.
func NewPostgresBuildResource() resource.Resource { return &postgresBuildResource{} }

type postgresBuildResource struct {
	data *providerData
}

// Builds take minutes on a big host and much longer on a small one.
const defaultBuildTimeout = 60 * time.Minute

func (r *postgresBuildResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_postgres_build"
}

func (r *postgresBuildResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replaceStr := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keepStr := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One PostgreSQL installation on a host: built from a release tarball or a git ref, " +
			"with patches and configure flags, into a prefix named by its build key (an identical build is reused), " +
			"or an installed PostgreSQL adopted with `source { system = BIN_DIR }`. Every argument forces " +
			"replacement. Destroy removes the prefix only if this resource built it, and never a `system` one.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The build key.",
				PlanModifiers:       keepStr,
			},
			"host_connection": connectionInputAttribute(),
			"patches": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Patch contents (not paths), applied in order with `patch -p1`, e.g. " +
					"`[file(\"v3-0001-fix.patch\")]`.",
				PlanModifiers: replaceList,
			},
			"configure_flags": schema.ListAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Extra `configure` flags, e.g. `[\"--with-libnuma\"]`.",
				PlanModifiers:       replaceList,
			},
			"cflags": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "`CFLAGS` for `configure`, e.g. `-O2 -g`.",
				PlanModifiers:       replaceStr,
			},
			"profiling": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Build for profiling: `" + pgbuild.FramePointerFlags + "` added to `cflags` (`-O2` when none are given), so the " +
					"profiles of `pgbench_ab_benchmark` (`observe.profile`) unwind call stacks with frame pointers, cheaply and completely. " +
					"It changes the build key. Without it a profile falls back to DWARF unwinding, which costs more per sample.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"jobs": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "`make -j` jobs; by default the host's CPU count. It changes in place: the build is not redone.",
			},
			"install_deps": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Install the build dependencies (compiler, bison, flex, ..., ccache with `ccache`) with the host's package manager first. " +
					"It changes in place: the build is not redone.",
			},
			"ccache": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Compile through ccache (default `false`), so that builds of nearby sources, such as the stock and the patched " +
					"build of an A/B or the builds of a bisect, reuse each other's objects, and the results of their `configure` when its " +
					"script and flags are the same. It does not change the build key, and changes in place. ccache must be installed: " +
					"`install_deps`, or `ccache` in the `pgbench_host`'s `bootstrap.packages`.",
			},
			"ccache_dir": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "ccache's cache directory on the host, with `ccache`; the kept `configure` results go in its " +
					"`pgbench-configure` subdirectory. Default `" + pgbuild.DefaultCCacheDir + "`. It changes in place.",
			},
			"prefix": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "Install prefix. By default `" + pgbuild.DefaultRoot + "/<build_key[:16]>`; " +
					"for `system`, the parent of the bin directory.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
			},
			"build_key": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Hash of everything that determines the build: source, patches, flags, compiler.",
				PlanModifiers:       keepStr,
			},
			"bin_dir": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The bin directory, for `pgbench_ab_benchmark` variants and `pgbench_hugepage_pool.size_for`.",
				PlanModifiers:       keepStr,
			},
			"version": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "PostgreSQL version, e.g. `15.18`.",
				PlanModifiers:       keepStr,
			},
			"cached": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "True when an existing build with the same key (or a `system` installation) was used and nothing was built.",
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
			"build_seconds": schema.Float64Attribute{
				Computed:            true,
				MarkdownDescription: "How long the build (or the check of a cached one) took.",
				PlanModifiers:       []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"source": schema.SingleNestedBlock{
				MarkdownDescription: "Where PostgreSQL comes from: exactly one of `tarball` (with optional `sha256`), " +
					"`git` with `ref`, or `system`.",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"tarball": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Release tarball: a path on the host or an http(s) URL the host downloads.",
					},
					"sha256": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Expected sha256 of the tarball; the build fails on a mismatch.",
					},
					"git": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Git repository URL, fetched on the host.",
					},
					"ref": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Branch, tag or commit to build from `git`.",
					},
					"system": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Bin directory of an installed PostgreSQL, e.g. `/usr/lib/postgresql/15/bin`; " +
							"it must hold postgres, pg_ctl, initdb and pgbench. Nothing is built or removed.",
					},
				},
			},
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (r *postgresBuildResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

func (r *postgresBuildResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m postgresBuildModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	src := path.Root("source")
	if m.Source == nil {
		resp.Diagnostics.AddAttributeError(src, "Missing Source",
			"Add a source block with exactly one of tarball, git (with ref) or system.")
		return
	}
	s := m.Source
	var kinds []string
	for _, k := range []struct {
		name string
		v    types.String
	}{{"tarball", s.Tarball}, {"git", s.Git}, {"system", s.System}} {
		if !k.v.IsNull() {
			kinds = append(kinds, k.name)
		}
	}
	switch len(kinds) {
	case 0:
		resp.Diagnostics.AddAttributeError(src, "Missing Source",
			"The source block needs exactly one of tarball, git (with ref) or system; none is set.")
	case 1:
	default:
		// At the last one set, the line Terraform quotes.
		resp.Diagnostics.AddAttributeError(src.AtName(kinds[len(kinds)-1]), "Conflicting Sources",
			fmt.Sprintf("The source block needs exactly one of tarball, git or system; more than one is set (%s). "+
				"Use one pgbench_postgres_build per installation.", strings.Join(kinds, ", ")))
	}
	if !s.SHA256.IsNull() && s.Tarball.IsNull() {
		resp.Diagnostics.AddAttributeError(src.AtName("sha256"), "Checksum Without Tarball", "sha256 applies to tarball only.")
	}
	if s.Git.IsNull() != s.Ref.IsNull() {
		resp.Diagnostics.AddAttributeError(src.AtName("ref"), "Git Needs A Ref", "git and ref go together: set both or neither.")
	}
	if !s.System.IsNull() {
		for name, set := range map[string]bool{
			"patches": !m.Patches.IsNull(), "configure_flags": !m.ConfigureFlags.IsNull(), "cflags": !m.CFlags.IsNull(),
			"profiling": !m.Profiling.IsNull(), "jobs": !m.Jobs.IsNull(), "prefix": !m.Prefix.IsNull(), "install_deps": !m.InstallDeps.IsNull(),
			"ccache": !m.CCache.IsNull(), "ccache_dir": !m.CCacheDir.IsNull(),
		} {
			if set {
				resp.Diagnostics.AddAttributeError(path.Root(name), "Nothing To Build",
					fmt.Sprintf("source.system adopts an installed PostgreSQL and builds nothing, so %s does not apply; remove it.", name))
			}
		}
		if v := s.System.ValueString(); !s.System.IsUnknown() && !strings.HasPrefix(v, "/") {
			resp.Diagnostics.AddAttributeError(src.AtName("system"), "Relative Bin Directory",
				fmt.Sprintf("system is %q; give the absolute bin directory, e.g. /usr/lib/postgresql/15/bin.", v))
		}
	}
	if !m.Jobs.IsNull() && !m.Jobs.IsUnknown() && m.Jobs.ValueInt64() < 1 {
		resp.Diagnostics.AddAttributeError(path.Root("jobs"), "Invalid Jobs", fmt.Sprintf("jobs is %d; it must be at least 1.", m.Jobs.ValueInt64()))
	}
	if !m.CCacheDir.IsNull() && !m.CCache.IsUnknown() && !m.CCache.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("ccache_dir"), "ccache Not Used",
			"ccache_dir is ccache's directory, and this build does not compile through ccache: set ccache = true, or remove ccache_dir.")
	}
	if v := m.CCacheDir.ValueString(); !m.CCacheDir.IsNull() && !m.CCacheDir.IsUnknown() && !strings.HasPrefix(v, "/") {
		resp.Diagnostics.AddAttributeError(path.Root("ccache_dir"), "Relative ccache Directory",
			fmt.Sprintf("ccache_dir is %q; give an absolute directory on the host.", v))
	}
}

func (r *postgresBuildResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m postgresBuildModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := m.Timeouts.Create(ctx, defaultBuildTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	conn, ex, ok := dialHost(ctx, m.Connection, "the build", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	rc := conn.runner(ex)
	rc.OnStderr = func(line string) { tflog.Info(ctx, line) }

	var patches, flags []string
	resp.Diagnostics.Append(m.Patches.ElementsAs(ctx, &patches, false)...)
	resp.Diagnostics.Append(m.ConfigureFlags.ElementsAs(ctx, &flags, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	paths, ok := uploadPatches(ctx, ex, rc.Path, "patches", patches, &resp.Diagnostics)
	if !ok {
		return
	}
	args := m.buildArgs(paths, flags)
	tflog.Info(ctx, "building PostgreSQL", map[string]any{"args": strings.Join(args, " ")})
	var res pgbuild.Result
	if err := runBuild(ctx, rc, &res, args); err != nil {
		m.addBuildError(err, ex, &resp.Diagnostics)
		return
	}
	tflog.Info(ctx, "PostgreSQL ready", map[string]any{"prefix": res.Prefix, "version": res.Version, "cached": res.Cached, "seconds": res.Seconds})
	m.setResult(res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *postgresBuildResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m postgresBuildModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	conn, ex, ok := dialHost(ctx, m.Connection, "checking the build", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	// An installation that vanished (removed by hand, or a rebuilt host) is
	// gone from state, so the next apply builds or adopts it again. The
	// runner's adopt check is the one that says an installation is usable.
	var res pgbuild.Result
	if err := conn.runner(ex).Run(ctx, &res, "build", "--system", m.BinDir.ValueString()); err != nil {
		var re *runnerclient.Error
		if errors.As(err, &re) && re.Kind == runnerclient.KindUnmet {
			tflog.Warn(ctx, "PostgreSQL installation is gone; removing it from state", map[string]any{"bin_dir": m.BinDir.ValueString(), "reason": re.Message})
			resp.State.RemoveResource(ctx)
			return
		}
		resp.Diagnostics.AddError("Cannot Check Installation", fmt.Sprintf("Checking %s on %s failed: %v", m.BinDir.ValueString(), ex, err))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *postgresBuildResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	// Timeouts, the way to the same host and how a build is made (jobs,
	// dependencies, ccache) change in place, and nothing is built again:
	// every other argument forces replacement.
	var plan, state postgresBuildModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.Connection, state.Timeouts = plan.Connection, plan.Timeouts
	state.Jobs, state.InstallDeps, state.CCache, state.CCacheDir = plan.Jobs, plan.InstallDeps, plan.CCache, plan.CCacheDir
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *postgresBuildResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m postgresBuildModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Source != nil && !m.Source.System.IsNull() {
		return // adopted, not ours
	}
	if m.Cached.ValueBool() {
		// Another resource or an earlier run built it; it owns the prefix.
		tflog.Info(ctx, "leaving a reused build in place", map[string]any{"prefix": m.Prefix.ValueString()})
		return
	}
	timeout, diags := m.Timeouts.Delete(ctx, 10*time.Minute)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, ex, ok := dialHost(ctx, m.Connection, "removing the build", &resp.Diagnostics)
	if !ok {
		return
	}
	defer ex.Close()
	err := conn.runner(ex).Run(ctx, nil, "build", "--remove", "--prefix", m.Prefix.ValueString(), "--build-key", m.BuildKey.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("PostgreSQL Build Removal Failed",
			fmt.Sprintf("Removing %s on %s failed: %v", m.Prefix.ValueString(), ex, err))
	}
}

// buildArgs is the runner's build command line for the model, with the
// patches at their uploaded paths.
func (m postgresBuildModel) buildArgs(patchPaths, flags []string) []string {
	args := []string{"build"}
	s := m.Source
	switch {
	case !s.System.IsNull():
		args = append(args, "--system", s.System.ValueString())
	case !s.Tarball.IsNull():
		args = append(args, "--tarball", s.Tarball.ValueString())
		if !s.SHA256.IsNull() {
			args = append(args, "--sha256", s.SHA256.ValueString())
		}
	default:
		args = append(args, "--git", s.Git.ValueString(), "--ref", s.Ref.ValueString())
	}
	for _, p := range patchPaths {
		args = append(args, "--patch", p)
	}
	for _, f := range flags {
		args = append(args, "--configure-flag="+f)
	}
	if !m.CFlags.IsNull() {
		args = append(args, "--cflags="+m.CFlags.ValueString())
	}
	if m.Profiling.ValueBool() {
		args = append(args, "--profiling")
	}
	if !m.Jobs.IsNull() {
		args = append(args, "--jobs", strconv.FormatInt(m.Jobs.ValueInt64(), 10))
	}
	if !m.Prefix.IsNull() && !m.Prefix.IsUnknown() {
		args = append(args, "--prefix", m.Prefix.ValueString())
	}
	if m.InstallDeps.ValueBool() {
		args = append(args, "--install-deps")
	}
	if m.CCache.ValueBool() {
		args = append(args, "--ccache")
		if !m.CCacheDir.IsNull() {
			args = append(args, "--ccache-dir", m.CCacheDir.ValueString())
		}
	}
	return args
}

// runBuild runs the runner's build into res. make prints nothing the runner
// forwards for minutes: a heartbeat in the log every 30 seconds shows the
// apply is alive.
func runBuild(ctx context.Context, rc runnerclient.Client, res *pgbuild.Result, args []string) error {
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tflog.Info(ctx, "still building PostgreSQL", map[string]any{"elapsed": time.Since(start).Round(time.Second).String()})
			}
		}
	}()
	return rc.Run(ctx, res, args...)
}

// addBuildError says what to do about a failed build: an adopted
// installation that is not usable, or sources that did not build.
func (m postgresBuildModel) addBuildError(err error, ex remote.Executor, diags *diag.Diagnostics) {
	if !m.Source.System.IsNull() {
		diags.AddAttributeError(path.Root("source").AtName("system"), "PostgreSQL Installation Not Usable",
			fmt.Sprintf("%v\n\nOn %s. Point system at the bin directory of a complete installation "+
				"(%s), e.g. /usr/lib/postgresql/15/bin.", err, ex, strings.Join(pgctl.BinDirPrograms, ", ")))
		return
	}
	diags.AddError("PostgreSQL Build Failed", fmt.Sprintf("%v\n\nOn %s. The build log is next to the prefix "+
		"(<prefix>.log); a failed build leaves no prefix behind, so fix the cause and apply again.", err, ex))
}

// setResult records a finished build in the model.
func (m *postgresBuildModel) setResult(res pgbuild.Result) {
	m.ID = types.StringValue(res.BuildKey)
	m.BuildKey = types.StringValue(res.BuildKey)
	m.Prefix = types.StringValue(res.Prefix)
	m.BinDir = types.StringValue(res.BinDir)
	m.Version = types.StringValue(res.Version)
	m.Cached = types.BoolValue(res.Cached)
	m.BuildSeconds = types.Float64Value(res.Seconds)
}

type postgresBuildModel struct {
	ID             types.String      `tfsdk:"id"`
	Connection     types.Object      `tfsdk:"host_connection"`
	Source         *buildSourceModel `tfsdk:"source"`
	Patches        types.List        `tfsdk:"patches"`
	ConfigureFlags types.List        `tfsdk:"configure_flags"`
	CFlags         types.String      `tfsdk:"cflags"`
	Profiling      types.Bool        `tfsdk:"profiling"`
	Jobs           types.Int64       `tfsdk:"jobs"`
	InstallDeps    types.Bool        `tfsdk:"install_deps"`
	CCache         types.Bool        `tfsdk:"ccache"`
	CCacheDir      types.String      `tfsdk:"ccache_dir"`
	Prefix         types.String      `tfsdk:"prefix"`
	BuildKey       types.String      `tfsdk:"build_key"`
	BinDir         types.String      `tfsdk:"bin_dir"`
	Version        types.String      `tfsdk:"version"`
	Cached         types.Bool        `tfsdk:"cached"`
	BuildSeconds   types.Float64     `tfsdk:"build_seconds"`
	Timeouts       timeouts.Value    `tfsdk:"timeouts"`
}

type buildSourceModel struct {
	Tarball types.String `tfsdk:"tarball"`
	SHA256  types.String `tfsdk:"sha256"`
	Git     types.String `tfsdk:"git"`
	Ref     types.String `tfsdk:"ref"`
	System  types.String `tfsdk:"system"`
}
