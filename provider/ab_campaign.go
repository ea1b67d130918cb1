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
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// pgbench_ab_benchmark's model becomes a campaign.Config here: the runner's
// definition of a campaign, with its defaults, its validation and its
// encoding as `pgbench-runner ab` arguments. The provider adds only what
// exists because of Terraform: values unknown at plan time, and blocks.

// abUnknowns are the attribute paths whose values are not known yet.
type abUnknowns []path.Path

func (u *abUnknowns) add(p path.Path) { *u = append(*u, p) }

// covers reports whether p or one of its parents is unknown.
func (u abUnknowns) covers(p path.Path) bool {
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

// abConfig builds the campaign definition of m, defaults applied. A value
// unknown at plan time keeps its default (or zero) and is listed in the
// returned abUnknowns; a value that does not convert (a duration that is not
// one) gets a diagnostic.
func abConfig(ctx context.Context, m *abBenchmarkModel) (*campaign.Config, abUnknowns, diag.Diagnostics) {
	r := &configReader{ctx: ctx}
	c := campaign.DefaultConfig()
	c.Clients = nil
	r.variants(c, m)
	c.Settings = r.settings(m.Settings, path.Root("settings"))
	r.workload(c, m.Workload)
	r.observe(c, m.Observe)
	r.runs(c, m)
	c.Defaults()
	return c, r.u, r.d
}

// configReader reads a configuration's values into a campaign.Config: a
// value unknown at plan time is left as it is and listed in u, one that
// does not convert gets a diagnostic in d.
type configReader struct {
	ctx context.Context
	u   abUnknowns
	d   diag.Diagnostics
}

func (r *configReader) str(dst *string, v types.String, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = v.ValueString()
	}
}

func (r *configReader) num(dst *int, v types.Int64, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = int(v.ValueInt64())
	}
}

func (r *configReader) boolean(dst *bool, v types.Bool, p path.Path) {
	switch {
	case v.IsUnknown():
		r.u.add(p)
	case !v.IsNull():
		*dst = v.ValueBool()
	}
}

func (r *configReader) dur(dst *time.Duration, v types.String, p path.Path) {
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

func (r *configReader) settings(v types.Map, p path.Path) map[string]string {
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

// variants reads the variant blocks.
func (r *configReader) variants(c *campaign.Config, m *abBenchmarkModel) {
	vp := path.Root("variant")
	if m.Variants.IsUnknown() {
		r.u.add(vp)
		return
	}
	variants, diags := m.variants(r.ctx)
	r.d.Append(diags...)
	for i, v := range variants {
		p := vp.AtListIndex(i)
		var cv campaign.Variant
		r.str(&cv.Name, v.Name, p.AtName("name"))
		r.str(&cv.BinDir, v.BinDir, p.AtName("bin_dir"))
		r.str(&cv.HugePages, v.HugePages, p.AtName("huge_pages"))
		cv.Settings = r.settings(v.Settings, p.AtName("settings"))
		c.Variants = append(c.Variants, cv)
	}
}

// workload reads the workload block.
func (r *configReader) workload(c *campaign.Config, w *abWorkloadModel) {
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

// observe reads the observe block, if any.
func (r *configReader) observe(c *campaign.Config, o *abObserveModel) {
	if o == nil {
		return
	}
	op := path.Root("observe")
	r.boolean(&c.Counters, o.Counters, op.AtName("counters"))
	r.dur(&c.WaitSampleInterval, o.WaitSampleInterval, op.AtName("wait_sample_interval"))
	r.str(&c.Profile, o.Profile, op.AtName("profile"))
	r.num(&c.ProfileFrequency, o.ProfileFrequency, op.AtName("profile_frequency"))
}

// runs reads how the runs are made and judged: the NUMA pinning, the
// order and its seed, alpha.
func (r *configReader) runs(c *campaign.Config, m *abBenchmarkModel) {
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

// iterations reads workload.iterations (a number or "auto") and the
// adaptive rule's attributes, which only iterations = "auto" reads: given
// with a number of iterations they are a mistake.
func (r *configReader) iterations(c *campaign.Config, w *abWorkloadModel, wp path.Path) {
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

// abValidate adds a diagnostic for each fault campaign.Validate finds in c,
// at its attribute, leaving out those about values not known yet.
func abValidate(c *campaign.Config, u abUnknowns, d *diag.Diagnostics) {
	addValidationErrors(c.Validate(), campaign.FieldByFlag, u, d)
}

// addValidationErrors adds a diagnostic for each *campaign.ValidationError
// err holds, at its attribute (field looks its flag up:
// campaign.FieldByFlag, bisect.FieldByFlag), leaving out those about
// values not known yet, its own or the ones its check read.
func addValidationErrors(err error, field func(flag string) campaign.Field, u abUnknowns, d *diag.Diagnostics) {
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

// abCampaign is the campaign m defines, checked and fully resolved: a
// randomized order without a seed gets one derived from the definition.
func abCampaign(ctx context.Context, m *abBenchmarkModel) (*campaign.Config, error) {
	c, _, d := abConfig(ctx, m)
	if d.HasError() {
		return nil, fmt.Errorf("read the configuration: %v", d)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.SeedFromDefinition()
	return c, nil
}

// abCommand places the campaign in its directory under installDir, named
// by its key, and returns the runner command line that runs it. The same
// configuration always gives the same directory, which is what lets a
// failed apply resume.
func abCommand(c *campaign.Config, installDir string) []string {
	c.OutDir = campaign.Dir(installDir, c.Key())
	args := append([]string{"ab"}, c.Args()...)
	return append(args, "--progress-json")
}

// abDoc is the MarkdownDescription of the argument at attr, from the
// campaign's table of fields: its description and its default, then extra
// sentences.
func abDoc(attr string, extra ...string) string {
	f := campaign.FieldByAttribute(attr)
	if f.Usage == "" {
		panic("pgbench_ab_benchmark: no campaign field at " + attr)
	}
	s := strings.ToUpper(f.Usage[:1]) + f.Usage[1:] + "."
	if f.Default != "" {
		s += " Default `" + f.Default + "`."
	}
	for _, e := range extra {
		s += " " + e
	}
	return s
}
