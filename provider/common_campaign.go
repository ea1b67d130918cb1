package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// The campaign blocks that pgbench_ab_benchmark and pgbench_perf_bisect
// share (the workload, the shared settings, the pinning, the order and
// alpha): their schema, their model, their reading into a campaign.Config
// and the mapping of the campaign's validation errors back to attributes.
// Each resource adds its own blocks (the variants and observe of a
// campaign, the refs and builds of a bisect).

// campaignModel is the part of a resource's model that the campaign
// blocks fill; the resource's model embeds it.
type campaignModel struct {
	Settings   types.Map              `tfsdk:"settings"`
	Workload   *campaignWorkloadModel `tfsdk:"workload"`
	ServerNUMA types.String           `tfsdk:"server_numa"`
	ClientNUMA types.String           `tfsdk:"client_numa"`
	Order      types.String           `tfsdk:"order"`
	Seed       types.Int64            `tfsdk:"seed"`
	Alpha      types.Float64          `tfsdk:"alpha"`
	Client     *campaignClientModel   `tfsdk:"client"`
}

type campaignWorkloadModel struct {
	Mode             types.String  `tfsdk:"mode"`
	Script           types.String  `tfsdk:"script"`
	Scale            types.Int64   `tfsdk:"scale"`
	Warehouses       types.Int64   `tfsdk:"warehouses"`
	Clients          types.List    `tfsdk:"clients"`
	Duration         types.String  `tfsdk:"duration"`
	Iterations       types.String  `tfsdk:"iterations"`
	TargetCIPct      types.Float64 `tfsdk:"target_ci_pct"`
	MinIterations    types.Int64   `tfsdk:"min_iterations"`
	MaxIterations    types.Int64   `tfsdk:"max_iterations"`
	Threads          types.String  `tfsdk:"threads"`
	Protocol         types.String  `tfsdk:"protocol"`
	Warmup           types.String  `tfsdk:"warmup"`
	CheckpointBefore types.Bool    `tfsdk:"checkpoint_before"`
	Restart          types.String  `tfsdk:"restart"`
}

// campaignStopGrace is how long a cancelled campaign (or bisect) gets to
// stop its servers cleanly before it is killed.
const campaignStopGrace = 2 * time.Minute

// campaignPinningAttributes are the arguments of how the runs are pinned
// and ordered: server_numa, client_numa and order.
func campaignPinningAttributes() map[string]schema.Attribute {
	rs := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	return map[string]schema.Attribute{
		"server_numa": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("server_numa")},
		"client_numa": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("client_numa")},
		"order":       schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("order")},
	}
}

// campaignWorkloadBlock is the workload block: what each run executes.
func campaignWorkloadBlock() schema.SingleNestedBlock {
	rs := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	ri := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	return schema.SingleNestedBlock{
		MarkdownDescription: "What each run executes (required).",
		PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		Attributes: map[string]schema.Attribute{
			"mode":   schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.mode")},
			"script": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.script")},
			"scale":  schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("workload.scale")},
			"warehouses": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("workload.warehouses",
				"A dataset already loaded in the campaign's data directory with another size, or by another version of the driver, is an error, not reloaded.")},
			"clients": schema.ListAttribute{ElementType: types.Int64Type, Optional: true,
				PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
				MarkdownDescription: "Client counts, e.g. `[1, 16, 64]` (required)."},
			"duration": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.duration")},
			"iterations": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.iterations",
				"A number (`iterations = 10`) or `\"auto\"`.")},
			"target_ci_pct": schema.Float64Attribute{Optional: true, MarkdownDescription: campaignDoc("workload.target_ci_pct"),
				PlanModifiers: []planmodifier.Float64{float64planmodifier.RequiresReplace()}},
			"min_iterations": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("workload.min_iterations")},
			"max_iterations": schema.Int64Attribute{Optional: true, PlanModifiers: ri, MarkdownDescription: campaignDoc("workload.max_iterations")},
			"threads":        schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.threads")},
			"protocol":       schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.protocol")},
			"warmup":         schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.warmup")},
			"checkpoint_before": schema.BoolAttribute{Optional: true, MarkdownDescription: campaignDoc("workload.checkpoint_before"),
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()}},
			"restart": schema.StringAttribute{Optional: true, PlanModifiers: rs, MarkdownDescription: campaignDoc("workload.restart")},
		},
	}
}

// campaignConfig starts the campaign definition of m: the campaign blocks
// read into a campaign.Config (defaults not applied yet), and the reader,
// for the resource's own blocks, with what it found unknown or invalid.
func campaignConfig(ctx context.Context, m *campaignModel) (*campaign.Config, *campaignReader) {
	r := &campaignReader{ctx: ctx}
	c := campaign.DefaultConfig()
	c.Clients = nil
	c.Settings = r.settings(m.Settings, path.Root("settings"))
	r.workload(c, m.Workload)
	r.runs(c, m)
	r.client(c, m.Client)
	return c, r
}

// campaignUnknowns are the attribute paths whose values are not known yet.
type campaignUnknowns []path.Path

func (u *campaignUnknowns) add(p path.Path) { *u = append(*u, p) }

// covers reports whether p or one of its parents is unknown.
func (u campaignUnknowns) covers(p path.Path) bool {
	for {
		for _, q := range u {
			if q.Equal(p) {
				return true
			}
		}
		if len(p.Steps()) <= 1 {
			return false
		}
		p = p.ParentPath()
	}
}

// campaignReader reads a configuration's values into a campaign.Config: a
// value unknown at plan time is left as it is and listed in u, one that
// does not convert gets a diagnostic in d.
type campaignReader struct {
	ctx context.Context
	u   campaignUnknowns
	d   diag.Diagnostics
}

func (r *campaignReader) str(dst *string, v types.String, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = v.ValueString()
	}
}

func (r *campaignReader) num(dst *int, v types.Int64, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = int(v.ValueInt64())
	}
}

func (r *campaignReader) boolean(dst *bool, v types.Bool, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = v.ValueBool()
	}
}

func (r *campaignReader) dur(dst *time.Duration, v types.String, p path.Path) {
	if v.IsUnknown() {
		r.u.add(p)
		return
	}
	if v.IsNull() {
		return
	}
	x, err := time.ParseDuration(v.ValueString())
	if err != nil {
		r.d.AddAttributeError(p, "Invalid Duration", fmt.Sprintf("%s is %q, which is not a duration; write it like 60s, 90s or 2m.", p, v.ValueString()))
		r.u.add(p) // reported: nothing more to say about it
		return
	}
	*dst = x
}

func (r *campaignReader) settings(v types.Map, p path.Path) map[string]string {
	out := map[string]string{}
	if v.IsUnknown() {
		r.u.add(p)
		return out
	}
	var s map[string]types.String
	if !v.IsNull() {
		r.d.Append(v.ElementsAs(r.ctx, &s, false)...)
	}
	for k, val := range s {
		if val.IsUnknown() {
			r.u.add(p.AtMapKey(k))
		}
		out[k] = val.ValueString()
	}
	return out
}

// workload reads the workload block.
func (r *campaignReader) workload(c *campaign.Config, w *campaignWorkloadModel) {
	wp := path.Root("workload")
	if w == nil {
		// A missing block is reported once, as such, not field by field.
		r.u.add(wp)
		return
	}
	r.str(&c.Mode, w.Mode, wp.AtName("mode"))
	r.str(&c.Script, w.Script, wp.AtName("script"))
	r.num(&c.Scale, w.Scale, wp.AtName("scale"))
	r.num(&c.Warehouses, w.Warehouses, wp.AtName("warehouses"))
	cp := wp.AtName("clients")
	if w.Clients.IsUnknown() {
		r.u.add(cp)
	} else if !w.Clients.IsNull() {
		var clients []types.Int64
		r.d.Append(w.Clients.ElementsAs(r.ctx, &clients, false)...)
		for i, n := range clients {
			c.Clients = append(c.Clients, 0)
			r.num(&c.Clients[i], n, cp.AtListIndex(i))
		}
	}
	r.str(&c.Threads, w.Threads, wp.AtName("threads"))
	r.dur(&c.Duration, w.Duration, wp.AtName("duration"))
	r.iterations(c, w, wp)
	r.str(&c.Protocol, w.Protocol, wp.AtName("protocol"))
	if wu := w.Warmup; !wu.IsUnknown() && !wu.IsNull() {
		c.WarmupAuto = wu.ValueString() == "auto"
	}
	if !c.WarmupAuto {
		r.dur(&c.Warmup, w.Warmup, wp.AtName("warmup"))
	}
	r.boolean(&c.CheckpointBefore, w.CheckpointBefore, wp.AtName("checkpoint_before"))
	r.str(&c.Restart, w.Restart, wp.AtName("restart"))
}

// iterations reads workload.iterations (a number or "auto") and the
// adaptive rule's attributes, which only iterations = "auto" reads: given
// with a number of iterations they are a mistake.
func (r *campaignReader) iterations(c *campaign.Config, w *campaignWorkloadModel, wp path.Path) {
	ip := wp.AtName("iterations")
	switch it := w.Iterations; {
	case it.IsUnknown():
		r.u.add(ip)
	case it.IsNull():
	case it.ValueString() == "auto":
		c.IterationsAuto, c.Iterations = true, 0
	default:
		n, err := strconv.Atoi(it.ValueString())
		if err != nil {
			r.d.AddAttributeError(ip, "Invalid Iterations", fmt.Sprintf("%s is %q: want a number of runs per variant and client count, or \"auto\".", ip, it.ValueString()))
			r.u.add(ip)
			return
		}
		c.Iterations = n
	}
	adaptive := []struct {
		name string
		v    attr.Value
		set  func()
	}{
		{"target_ci_pct", w.TargetCIPct, func() { c.TargetCIPct = w.TargetCIPct.ValueFloat64() }},
		{"min_iterations", w.MinIterations, func() { c.MinIterations = int(w.MinIterations.ValueInt64()) }},
		{"max_iterations", w.MaxIterations, func() { c.MaxIterations = int(w.MaxIterations.ValueInt64()) }},
	}
	for _, a := range adaptive {
		p := wp.AtName(a.name)
		switch {
		case a.v.IsUnknown():
			r.u.add(p)
		case a.v.IsNull():
		case c.IterationsAuto:
			a.set()
		case !r.u.covers(ip):
			r.d.AddAttributeError(p, "Adaptive Setting Without Adaptive Iterations", fmt.Sprintf(
				"%s applies only with %s = \"auto\"; %s is %d. Remove it, or let each client count choose its iterations with %s = \"auto\".", p, ip, ip, c.Iterations, ip))
		}
	}
}

// runs reads how the runs are made and judged: the NUMA pinning, the
// order and its seed, alpha.
func (r *campaignReader) runs(c *campaign.Config, m *campaignModel) {
	r.str(&c.ServerNUMA, m.ServerNUMA, path.Root("server_numa"))
	r.str(&c.ClientNUMA, m.ClientNUMA, path.Root("client_numa"))
	r.str(&c.Order, m.Order, path.Root("order"))
	switch {
	case m.Seed.IsUnknown():
		r.u.add(path.Root("seed"))
	case !m.Seed.IsNull():
		c.Seed, c.SeedSet = m.Seed.ValueInt64(), true
	}
	switch {
	case m.Alpha.IsUnknown():
		r.u.add(path.Root("alpha"))
	case !m.Alpha.IsNull():
		c.Alpha = m.Alpha.ValueFloat64()
	}
}

// addValidationErrors adds a diagnostic for each *campaign.ValidationError
// err holds, at its attribute (field looks its flag up:
// campaign.FieldByFlag, bisect.FieldByFlag), leaving out those about
// values not known yet, its own or the ones its check read.
func addValidationErrors(err error, field func(flag string) campaign.Field, u campaignUnknowns, d *diag.Diagnostics) {
	attr := func(p campaign.Path) path.Path { return fieldAttrPath(p, field) }
	for _, ve := range campaign.ValidationErrors(err) {
		p := attr(ve.Path)
		skip := u.covers(p)
		for _, f := range ve.Uses {
			skip = skip || u.covers(attr(campaign.Path{Flag: f, Index: -1}))
		}
		if skip {
			continue
		}
		text := ve.Text(func(p campaign.Path) string { return attr(p).String() })
		if len(p.Steps()) == 0 {
			d.AddError(ve.Title, upperFirst(text)+".")
			continue
		}
		d.AddAttributeError(p, ve.Title, text+".")
	}
}

// fieldAttrPath is the attribute of a field of the definition: the field's
// attribute (field looks its flag up), then the list element, the
// variant's part and the settings key. A field Terraform does not expose
// has the empty path.
func fieldAttrPath(p campaign.Path, field func(flag string) campaign.Field) path.Path {
	attr := field(p.Flag).Attribute
	if attr == "" {
		return path.Empty()
	}
	ap := attrPath(attr)
	if p.Index >= 0 {
		ap = ap.AtListIndex(p.Index)
	}
	if p.Part != "" {
		ap = ap.AtName(p.Part)
	}
	if p.Key != "" {
		ap = ap.AtMapKey(p.Key)
	}
	return ap
}

// attrPath is the path of a dotted attribute name ("workload.clients");
// the empty path for "", a field Terraform does not expose.
func attrPath(attr string) path.Path {
	if attr == "" {
		return path.Empty()
	}
	parts := strings.Split(attr, ".")
	p := path.Root(parts[0])
	for _, s := range parts[1:] {
		p = p.AtName(s)
	}
	return p
}

// campaignDoc is the MarkdownDescription of the argument at attr, from the
// campaign's table of fields: its description and its default, then extra
// sentences.
func campaignDoc(attr string, extra ...string) string {
	f := campaign.FieldByAttribute(attr)
	if f.Usage == "" {
		panic("no campaign field at " + attr)
	}
	return fieldDoc(f, extra...)
}

// fieldDoc is the MarkdownDescription of the argument of f: its
// description and its default, then extra sentences.
func fieldDoc(f campaign.Field, extra ...string) string {
	s := upperFirst(f.Usage) + "."
	if f.Default != "" {
		s += " Default `" + f.Default + "`."
	}
	for _, e := range extra {
		s += " " + e
	}
	return s
}

// campaignProgress forwards the runner's progress events to the Terraform log
// while the campaign runs (visible with TF_LOG=INFO) and to the campaign's
// progress.log, in the words the runner prints them, and keeps the
// warnings for diagnostics.
type campaignProgress struct {
	ctx      context.Context
	log      *progressLog
	warnings []string
}

func (p *campaignProgress) event(e campaign.Event) {
	if e.Event != campaign.EventRunStart {
		p.log.line(e.String())
	}
	msg := "campaign: " + e.String()
	fields := map[string]any{"seq": e.Seq, "total": e.Total, "variant": e.Variant, "clients": e.Clients, "iteration": e.Iteration}
	for k, v := range map[string]*float64{"tps": e.TPS, "nopm": e.NOPM, "seconds": e.Seconds, "elapsed_seconds": e.ElapsedSeconds, "eta_seconds": e.ETASeconds} {
		if v != nil {
			fields[k] = *v
		}
	}
	switch e.Event {
	case campaign.EventPhase, campaign.EventWaiting:
		tflog.Info(p.ctx, msg)
	case campaign.EventWarning:
		tflog.Warn(p.ctx, msg)
		p.warnings = append(p.warnings, e.Message)
	case campaign.EventRunSkipped, campaign.EventRunDone:
		tflog.Info(p.ctx, msg, fields)
	case campaign.EventDone:
		tflog.Info(p.ctx, msg)
	default:
		tflog.Debug(p.ctx, msg, fields)
	}
}

// line logs a stderr line that is not an event.
func (p *campaignProgress) line(l string) { tflog.Debug(p.ctx, "pgbench-runner: "+l) }
