// Package provider implements the pgbench Terraform provider.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
)

var _ provider.Provider = (*pgbenchProvider)(nil)

// New returns a constructor for the provider at the given version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &pgbenchProvider{version: version} }
}

type pgbenchProvider struct {
	version string
}

// providerData reaches every resource and data source through Configure.
// Tests replace its fields (clock, AWS endpoint, runner source).
type providerData struct {
	version string
	aws     awsConfig
	runner  runnerSource
	now     func() time.Time
	// historyURL is the results database collected campaigns are written
	// to ("" for none): the history block's, else the environment's.
	historyURL string
}

// awsConfig is the provider's aws block, used by EC2 hosts.
type awsConfig struct {
	Region                 string
	Profile                string
	Endpoint               string
	STSEndpoint            string
	ServiceQuotasEndpoint  string
	SharedConfigFiles      []string
	SharedCredentialsFiles []string
	AssumeRole             *ec2host.AssumeRole
	// DefaultTags go on every EC2 host under its own tags; nil while
	// unknown (DefaultTagsUnknown).
	DefaultTags        map[string]string
	DefaultTagsUnknown bool
	// AllowedAccountIDs, when not empty, are the only accounts EC2 calls
	// may be made in (checked once, by accountCheck).
	AllowedAccountIDs []string
	account           *accountCheck
}

// accountCheck remembers the outcome of the allowed_account_ids check of
// the provider's credentials, made once per provider run.
type accountCheck struct {
	mu   sync.Mutex
	done bool
	err  error
}

// check runs c.CheckAccount the first time and answers from memory after.
// A failure to reach STS is not remembered: the next call asks again.
func (a *accountCheck) check(ctx context.Context, c *ec2host.Client, allowed []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return a.err
	}
	err := c.CheckAccount(ctx, allowed)
	var na *ec2host.AccountNotAllowedError
	if err == nil || errors.As(err, &na) {
		a.done, a.err = true, err
	}
	return err
}

// runnerSource is the pgbench-runner binary uploaded to hosts: the ones
// embedded in the provider, or a file named in the runner block.
type runnerSource struct {
	binary   runnerbin.Source
	describe string // "embedded" or the file's path
}

var embeddedRunner = runnerSource{binary: runnerbin.Binary, describe: "embedded"}

// fileRunner uploads one user-built runner to every host, whatever its
// architecture: the user chose it.
func fileRunner(path string) runnerSource {
	return runnerSource{
		describe: path,
		binary: func(string) ([]byte, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read runner binary: %w", err)
			}
			return b, nil
		},
	}
}

func (p *pgbenchProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "pgbench"
	resp.Version = p.version
}

func (p *pgbenchProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Provision and tune benchmark hosts, reserve huge pages, build PostgreSQL " +
			"and run A/B pgbench campaigns whose results come back as attributes.",
		Blocks: map[string]schema.Block{
			"aws": schema.SingleNestedBlock{
				MarkdownDescription: "AWS settings for `pgbench_host` resources with an `ec2` block and for `pgbench_ec2_sweep`. " +
					"Credentials come from the usual AWS chain: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, " +
					"`AWS_PROFILE`, the shared config and credentials files, then container and instance roles. " +
					"A `profile` set here wins over keys in the environment, as in the AWS CLI.",
				Blocks: map[string]schema.Block{
					"assume_role": schema.SingleNestedBlock{
						MarkdownDescription: "Assume this IAM role, with the credentials found as above, for every EC2 call " +
							"(STS AssumeRole; the temporary credentials are renewed before they expire).",
						// A required attribute of a single nested block is required
						// even when the block is absent: require it with the block.
						Validators: []validator.Object{objectvalidator.AlsoRequires(path.MatchRelative().AtName("role_arn"))},
						Attributes: map[string]schema.Attribute{
							"role_arn": schema.StringAttribute{
								Optional:            true,
								MarkdownDescription: "ARN of the role, e.g. `arn:aws:iam::123456789012:role/pgbench`. Required in the block.",
								Validators: []validator.String{stringvalidator.RegexMatches(roleARNPattern,
									"must be an IAM role ARN such as arn:aws:iam::123456789012:role/pgbench")},
							},
							"session_name": schema.StringAttribute{
								Optional: true,
								MarkdownDescription: "Role session name, shown in CloudTrail and used as the `owner` tag when no user is known. " +
									"Default: `" + ec2host.DefaultSessionName + "`.",
								Validators: []validator.String{stringvalidator.RegexMatches(sessionNamePattern,
									"must be 2 to 64 characters of letters, digits and +=,.@_-")},
							},
							"external_id": schema.StringAttribute{
								Optional:            true,
								Sensitive:           true,
								MarkdownDescription: "External ID the role's trust policy requires (`sts:ExternalId`), if any.",
								Validators: []validator.String{stringvalidator.LengthBetween(2, 1224), stringvalidator.RegexMatches(externalIDPattern,
									"must be letters, digits and +=,.@:/_-")},
							},
							"duration": schema.StringAttribute{
								Optional: true,
								MarkdownDescription: "Lifetime of each set of temporary credentials, a Go duration from `15m` to `12h` " +
									"(at most the role's maximum session duration, 1h unless raised). Default: `15m`.",
								Validators: []validator.String{durationValidator{min: 15 * time.Minute, max: 12 * time.Hour}},
							},
						},
					},
				},
				Attributes: map[string]schema.Attribute{
					"region": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Default region for EC2 hosts, e.g. `us-east-2`. Falls back to `AWS_REGION`.",
					},
					"profile": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Named profile from the shared AWS config files.",
					},
					"endpoint": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Override of the EC2 API endpoint URL, for testing or a private (VPC) endpoint.",
					},
					"sts_endpoint": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Override of the STS API endpoint URL (used by `assume_role` and to find the `owner` tag), " +
							"for testing or a private (VPC) endpoint.",
					},
					"servicequotas_endpoint": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Override of the Service Quotas API endpoint URL (the create's preflight reads the " +
							"On-Demand vCPU quota there), for testing or a private (VPC) endpoint.",
					},
					"shared_config_files": schema.ListAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "Paths of shared AWS config files, instead of `~/.aws/config`.",
					},
					"default_tags": schema.MapAttribute{
						ElementType: types.StringType,
						Optional:    true,
						MarkdownDescription: "Tags for every EC2 host's instance and volumes, under the host's own `ec2.tags` (a key in both " +
							"takes the host's value). Changing them updates the tags of running hosts in place. `managed-by`, `owner` and " +
							"`expires-at` are the provider's own and cannot be set here.",
						Validators: []validator.Map{userTagKeys{}},
					},
					"allowed_account_ids": schema.ListAttribute{
						ElementType: types.StringType,
						Optional:    true,
						MarkdownDescription: "AWS account ids EC2 hosts may be made in. When set, the account of the credentials is " +
							"read with STS GetCallerIdentity before any EC2 call, and credentials of another account are refused " +
							"before anything is created (or refreshed, changed, destroyed).",
						Validators: []validator.List{listvalidator.SizeAtLeast(1),
							listvalidator.ValueStringsAre(stringvalidator.RegexMatches(accountIDPattern, "must be a 12-digit AWS account id"))},
					},
					"shared_credentials_files": schema.ListAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "Paths of shared AWS credentials files, instead of `~/.aws/credentials`.",
					},
				},
			},
			"history": schema.SingleNestedBlock{
				MarkdownDescription: "A PostgreSQL results database every collected `pgbench_ab_benchmark` campaign is also written to, " +
					"so CI workspaces that come and go share one history (`pgbench-runner history --database`, " +
					"`history changes`, the `pgbench_history` data source). The schema is created and migrated on first use. " +
					"When the database cannot be reached the apply still succeeds, with a warning naming its host and port: the " +
					"campaign stays in the local `history.jsonl`, marked pending in `history.jsonl.pending`, and the next apply " +
					"(or `pgbench-runner history import`) writes it.",
				Attributes: map[string]schema.Attribute{
					"database_url": schema.StringAttribute{
						Optional:  true,
						Sensitive: true,
						MarkdownDescription: "URL of the database, `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (pgx's parameters such as " +
							"`sslmode` and `connect_timeout` apply; the connection times out after 15 s unless `connect_timeout` says otherwise). " +
							"Falls back to `" + resultsdb.EnvURL + "`.",
						Validators: []validator.String{postgresURL{}},
					},
				},
			},
			"runner": schema.SingleNestedBlock{
				MarkdownDescription: "Which `pgbench-runner` binary is uploaded to hosts. " +
					"By default the provider uploads the runner embedded in it for the host's architecture.",
				Attributes: map[string]schema.Attribute{
					"path": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Path of a `pgbench-runner` binary (e.g. from `make runner`) to upload instead of " +
							"the embedded one. It is uploaded to every host as it is, whatever the host's architecture.",
					},
				},
			},
		},
	}
}

type providerModel struct {
	AWS     *awsModel     `tfsdk:"aws"`
	History *historyModel `tfsdk:"history"`
	Runner  *runnerModel  `tfsdk:"runner"`
}

type historyModel struct {
	DatabaseURL types.String `tfsdk:"database_url"`
}

type awsModel struct {
	Region                 types.String     `tfsdk:"region"`
	Profile                types.String     `tfsdk:"profile"`
	Endpoint               types.String     `tfsdk:"endpoint"`
	SharedConfigFiles      types.List       `tfsdk:"shared_config_files"`
	SharedCredentialsFiles types.List       `tfsdk:"shared_credentials_files"`
	STSEndpoint            types.String     `tfsdk:"sts_endpoint"`
	ServiceQuotasEndpoint  types.String     `tfsdk:"servicequotas_endpoint"`
	AssumeRole             *assumeRoleModel `tfsdk:"assume_role"`
	DefaultTags            types.Map        `tfsdk:"default_tags"`
	AllowedAccountIDs      types.List       `tfsdk:"allowed_account_ids"`
}

type assumeRoleModel struct {
	RoleARN     types.String `tfsdk:"role_arn"`
	SessionName types.String `tfsdk:"session_name"`
	ExternalID  types.String `tfsdk:"external_id"`
	Duration    types.String `tfsdk:"duration"`
}

// IAM's patterns for what AssumeRole takes, checked at plan time so a
// typo is not found by the first EC2 call of an apply.
var (
	roleARNPattern     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\x21-\x7e]+$`)
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	externalIDPattern  = regexp.MustCompile(`^[\w+=,.@:/-]*$`)
	accountIDPattern   = regexp.MustCompile(`^\d{12}$`)
)

// assumeRole is the role to assume, nil without an assume_role block. The
// duration was validated at plan time.
func (m *assumeRoleModel) assumeRole() *ec2host.AssumeRole {
	if m == nil || m.RoleARN.IsNull() {
		return nil
	}
	d, _ := time.ParseDuration(m.Duration.ValueString())
	return &ec2host.AssumeRole{RoleARN: m.RoleARN.ValueString(), SessionName: m.SessionName.ValueString(),
		ExternalID: m.ExternalID.ValueString(), Duration: d}
}

type runnerModel struct {
	Path types.String `tfsdk:"path"`
}

func (p *pgbenchProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data := &providerData{version: p.version, runner: embeddedRunner, now: time.Now}

	if cfg.AWS != nil {
		data.aws.Region = cfg.AWS.Region.ValueString()
		data.aws.Profile = cfg.AWS.Profile.ValueString()
		data.aws.Endpoint = cfg.AWS.Endpoint.ValueString()
		data.aws.STSEndpoint = cfg.AWS.STSEndpoint.ValueString()
		data.aws.ServiceQuotasEndpoint = cfg.AWS.ServiceQuotasEndpoint.ValueString()
		data.aws.AssumeRole = cfg.AWS.AssumeRole.assumeRole()
		resp.Diagnostics.Append(cfg.AWS.SharedConfigFiles.ElementsAs(ctx, &data.aws.SharedConfigFiles, false)...)
		resp.Diagnostics.Append(cfg.AWS.SharedCredentialsFiles.ElementsAs(ctx, &data.aws.SharedCredentialsFiles, false)...)
		data.aws.DefaultTagsUnknown = cfg.AWS.DefaultTags.IsUnknown()
		if !cfg.AWS.DefaultTags.IsNull() && !cfg.AWS.DefaultTags.IsUnknown() {
			resp.Diagnostics.Append(cfg.AWS.DefaultTags.ElementsAs(ctx, &data.aws.DefaultTags, false)...)
		}
		resp.Diagnostics.Append(cfg.AWS.AllowedAccountIDs.ElementsAs(ctx, &data.aws.AllowedAccountIDs, false)...)
	}
	data.aws.account = &accountCheck{}
	if cfg.Runner != nil && !cfg.Runner.Path.IsNull() {
		p := cfg.Runner.Path.ValueString()
		if cfg.Runner.Path.IsUnknown() {
			// Known only at apply time; the resources read it then.
		} else if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			detail := fmt.Sprintf("runner.path is %q, which is not a readable regular file", p)
			if err != nil {
				detail += fmt.Sprintf(" (%v)", err)
			}
			resp.Diagnostics.AddAttributeError(path.Root("runner").AtName("path"), "Runner Binary Not Found",
				detail+". Build one with `make runner` and point runner.path at it, or remove the runner block to use the embedded runner.")
		} else {
			data.runner = fileRunner(p)
		}
	}
	data.historyURL = historyDatabaseURL(cfg.History)
	if _, err := resultsdb.ParseURL(data.historyURL); data.historyURL != "" && err != nil {
		// The attribute was checked at validation; this is the variable.
		resp.Diagnostics.AddError("Invalid Results Database URL", fmt.Sprintf("%s: %v. Set it to a postgres:// URL or unset it.", resultsdb.EnvURL, err))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.ResourceData = data
	resp.DataSourceData = data
}

func (p *pgbenchProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewHostResource, NewABBenchmarkResource, NewHugepagePoolResource, NewPostgresBuildResource, NewEC2SweepResource, NewPerfBisectResource, NewPlacementGroupResource}
}

func (p *pgbenchProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewRunnerDataSource, NewHistoryDataSource}
}

// configuredData returns the provider's data handed to a resource or data
// source in Configure, or nil before the provider is configured (Terraform
// validates configurations before that).
func configuredData(v any, diags *diag.Diagnostics) *providerData {
	if v == nil {
		return nil
	}
	data, ok := v.(*providerData)
	if !ok {
		diags.AddError("Unexpected Provider Data", fmt.Sprintf("expected *providerData, got %T; this is a bug in the provider", v))
		return nil
	}
	return data
}
