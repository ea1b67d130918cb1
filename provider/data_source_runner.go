package provider

import (
	"context"
	"errors"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
)

var _ datasource.DataSourceWithConfigure = (*runnerDataSource)(nil)

// NewRunnerDataSource returns the pgbench_runner data source.
func NewRunnerDataSource() datasource.DataSource { return &runnerDataSource{} }

type runnerDataSource struct {
	data *providerData
}

func (d *runnerDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_runner"
}

func (d *runnerDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The `pgbench-runner` binary this provider uploads to hosts of an architecture: " +
			"its source, size and sha256, so a person can check what runs on a benchmark host.",
		Attributes: map[string]schema.Attribute{
			"architecture": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Host architecture as `uname -m` prints it (`x86_64` or `aarch64`). Default `x86_64`.",
				Validators: []validator.String{
					stringvalidator.OneOf("x86_64", "amd64", "aarch64", "arm64"),
				},
			},
			"source": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`embedded`, or the path set in the provider's `runner` block.",
			},
			"sha256": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Hex sha256 of the binary that would be uploaded.",
			},
			"size_bytes": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Size of the binary in bytes.",
			},
			"provider_version": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Version of this provider.",
			},
			"embedded_architectures": schema.ListAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "Go architectures for which this provider build embeds a runner.",
			},
		},
	}
}

func (d *runnerDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

type runnerDataSourceModel struct {
	Architecture          types.String `tfsdk:"architecture"`
	Source                types.String `tfsdk:"source"`
	SHA256                types.String `tfsdk:"sha256"`
	SizeBytes             types.Int64  `tfsdk:"size_bytes"`
	ProviderVersion       types.String `tfsdk:"provider_version"`
	EmbeddedArchitectures types.List   `tfsdk:"embedded_architectures"`
}

func (d *runnerDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m runnerDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	uname := "x86_64"
	if !m.Architecture.IsNull() {
		uname = m.Architecture.ValueString()
	}
	arch, err := runnerbin.Arch(uname)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("architecture"), "Unsupported Architecture", err.Error())
		return
	}
	bin, err := d.data.runner.binary(arch)
	if err != nil {
		summary := "Runner Binary Unavailable"
		var ne *runnerbin.ErrNotEmbedded
		if errors.As(err, &ne) {
			summary = "Runner Not Embedded"
		}
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	archs, diags := types.ListValueFrom(ctx, types.StringType, runnerbin.Embedded())
	resp.Diagnostics.Append(diags...)
	m.Architecture = types.StringValue(uname)
	m.Source = types.StringValue(d.data.runner.describe)
	m.SHA256 = types.StringValue(digest.SHA256(bin))
	m.SizeBytes = types.Int64Value(int64(len(bin)))
	m.ProviderVersion = types.StringValue(d.data.version)
	m.EmbeddedArchitectures = archs
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
