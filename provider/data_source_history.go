package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
)

var _ datasource.DataSourceWithConfigure = (*historyDataSource)(nil)

// NewHistoryDataSource returns the pgbench_history data source.
func NewHistoryDataSource() datasource.DataSource { return &historyDataSource{} }

type historyDataSource struct {
	data *providerData
}

func (d *historyDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_history"
}

func (d *historyDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	changes := map[string]schema.Attribute{
		"campaign":    schema.StringAttribute{Computed: true, MarkdownDescription: "The first campaign after the change."},
		"recorded_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When that campaign was recorded (RFC 3339)."},
		"index":       schema.Int64Attribute{Computed: true, MarkdownDescription: "Its position in the series, 0 being the oldest."},
		"before_pct":  schema.Float64Attribute{Computed: true, MarkdownDescription: "Mean `delta_pct` of the stretch before the change."},
		"after_pct":   schema.Float64Attribute{Computed: true, MarkdownDescription: "Mean `delta_pct` of the stretch after it."},
		"p_value":     schema.Float64Attribute{Computed: true, MarkdownDescription: "Permutation p-value of the change."},
	}
	str := func(doc string) schema.Attribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: doc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The series of comparisons in the results database (the provider's `history` block) and their change points: " +
			"the campaigns after which a series' `delta_pct` moved and stayed (E-divisive means with a permutation test at p <= 0.01, " +
			"a change confirmed by at least 3 campaigns each side). A series is one host class (instance type, else CPU model and count), " +
			"workload (mode, scale, clients, duration, protocol) and pair of variant names, in time order. A `check` block or a " +
			"postcondition on it fails a pipeline on a new regression.",
		Attributes: map[string]schema.Attribute{
			"database_url": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "URL of the results database. Default: the provider's `history.database_url`, else `" + resultsdb.EnvURL + "`.",
				Validators:          []validator.String{postgresURL{}},
			},
			"baseline":  schema.StringAttribute{Optional: true, MarkdownDescription: "Only series against this baseline variant."},
			"candidate": schema.StringAttribute{Optional: true, MarkdownDescription: "Only series of this candidate variant."},
			"clients": schema.Int64Attribute{Optional: true, MarkdownDescription: "Only series at this client count.",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"series": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The series, ordered by host class, baseline, candidate, mode and clients.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"host":             str("Host class: the instance type, else the CPU model and CPU count."),
					"mode":             str("Workload mode."),
					"scale":            schema.Int64Attribute{Computed: true, MarkdownDescription: "pgbench scale."},
					"clients":          schema.Int64Attribute{Computed: true, MarkdownDescription: "Client count."},
					"duration_seconds": schema.Float64Attribute{Computed: true, MarkdownDescription: "Duration of each run."},
					"protocol":         str("Query protocol."),
					"baseline":         str("Baseline variant name."),
					"candidate":        str("Candidate variant name."),
					"points":           schema.Int64Attribute{Computed: true, MarkdownDescription: "Comparisons in the series."},
					"last_campaign":    str("The newest campaign of the series."),
					"last_delta_pct":   schema.Float64Attribute{Computed: true, MarkdownDescription: "Its `delta_pct`."},
					"changes": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Change points, oldest first.",
						NestedObject: schema.NestedAttributeObject{Attributes: changes}},
				}},
			},
		},
	}
}

func (d *historyDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = configuredData(req.ProviderData, &resp.Diagnostics)
}

func (d *historyDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m historyDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	url := m.DatabaseURL.ValueString()
	if url == "" && d.data != nil {
		url = d.data.historyURL
	}
	if url == "" {
		resp.Diagnostics.AddAttributeError(path.Root("database_url"), "No Results Database",
			"Set database_url here, the provider's history.database_url, or "+resultsdb.EnvURL+".")
		return
	}
	db, err := resultsdb.Open(ctx, url)
	if err != nil {
		resp.Diagnostics.AddError("Results Database Not Read", fmt.Sprintf("%v.", err))
		return
	}
	defer db.Close()
	points, err := db.Points(ctx, resultsdb.Filter{Baseline: m.Baseline.ValueString(), Candidate: m.Candidate.ValueString(),
		Clients: int(m.Clients.ValueInt64())})
	if err != nil {
		resp.Diagnostics.AddError("Results Database Not Read", fmt.Sprintf("%v.", err))
		return
	}
	m.Series = historySeriesModels(report.HistoryChanges(points), points)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// historySeriesModels turns the series and their change points into the
// data source's attribute; points gives each series' newest campaign.
func historySeriesModels(series []report.SeriesChanges, points []report.SeriesPoint) []historySeriesModel {
	newest := map[report.SeriesKey]report.SeriesPoint{}
	for _, p := range points {
		if n, ok := newest[p.Key]; !ok || p.RecordedAt.After(n.RecordedAt) {
			newest[p.Key] = p
		}
	}
	out := []historySeriesModel{}
	for _, s := range series {
		k, last := s.Key, newest[s.Key]
		sm := historySeriesModel{Host: k.Host, Mode: k.Mode, Scale: int64(k.Scale), Clients: int64(k.Clients), DurationSeconds: k.DurationSeconds,
			Protocol: k.Protocol, Baseline: k.Baseline, Candidate: k.Candidate, Points: int64(s.Points),
			LastCampaign: last.Campaign, LastDeltaPct: last.DeltaPct, Changes: []historyChangeModel{}}
		for _, c := range s.Changes {
			sm.Changes = append(sm.Changes, historyChangeModel{Campaign: c.Campaign, RecordedAt: c.RecordedAt.UTC().Format(time.RFC3339),
				Index: int64(c.Index), BeforePct: c.BeforePct, AfterPct: c.AfterPct, PValue: c.PValue})
		}
		out = append(out, sm)
	}
	return out
}

type historyDataSourceModel struct {
	DatabaseURL types.String         `tfsdk:"database_url"`
	Baseline    types.String         `tfsdk:"baseline"`
	Candidate   types.String         `tfsdk:"candidate"`
	Clients     types.Int64          `tfsdk:"clients"`
	Series      []historySeriesModel `tfsdk:"series"`
}

type historySeriesModel struct {
	Host            string               `tfsdk:"host"`
	Mode            string               `tfsdk:"mode"`
	Scale           int64                `tfsdk:"scale"`
	Clients         int64                `tfsdk:"clients"`
	DurationSeconds float64              `tfsdk:"duration_seconds"`
	Protocol        string               `tfsdk:"protocol"`
	Baseline        string               `tfsdk:"baseline"`
	Candidate       string               `tfsdk:"candidate"`
	Points          int64                `tfsdk:"points"`
	LastCampaign    string               `tfsdk:"last_campaign"`
	LastDeltaPct    float64              `tfsdk:"last_delta_pct"`
	Changes         []historyChangeModel `tfsdk:"changes"`
}

type historyChangeModel struct {
	Campaign   string  `tfsdk:"campaign"`
	RecordedAt string  `tfsdk:"recorded_at"`
	Index      int64   `tfsdk:"index"`
	BeforePct  float64 `tfsdk:"before_pct"`
	AfterPct   float64 `tfsdk:"after_pct"`
	PValue     float64 `tfsdk:"p_value"`
}
