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
	var d diag.Diagnostics
	var u abUnknowns
	c := campaign.DefaultConfig()
	c.Clients = nil
	str := func(dst *string, v types.String, p path.Path) {
		switch {
		case v.IsUnknown():
			u.add(p)
		case !v.IsNull():
			*dst = v.ValueString()
		}
	}
	num := func(dst *int, v types.Int64, p path.Path) {
		switch {
		case v.IsUnknown():
			u.add(p)
		case !v.IsNull():
			*dst = int(v.ValueInt64())
		}
	}
	dur := func(dst *time.Duration, v types.String, p path.Path) {
		if v.IsUnknown() {
			u.add(p)
			return
		}
		if v.IsNull() {
			return
		}
		x, err := time.ParseDuration(v.ValueString())
		if err != nil {
			d.AddAttributeError(p, "Invalid Duration", fmt.Sprintf("%s is %q, which is not a duration; write it like 60s, 90s or 2m.", p, v.ValueString()))
			u.add(p) // reported: nothing more to say about it
			return
		}
		*dst = x
	}
	settings := func(v types.Map, p path.Path) map[string]string {
		out := map[string]string{}
		if v.IsUnknown() {
			u.add(p)
			return out
		}
		var s map[string]types.String
		if !v.IsNull() {
			d.Append(v.ElementsAs(ctx, &s, false)...)
		}
		for k, val := range s {
			if val.IsUnknown() {
				u.add(p.AtMapKey(k))
			}
			out[k] = val.ValueString()
		}
		return out
	}

	vp := path.Root("variant")
	if m.Variants.IsUnknown() {
		u.add(vp)
	} else {
		variants, diags := m.variants(ctx)
		d.Append(diags...)
		for i, v := range variants {
			p := vp.AtListIndex(i)
			var cv campaign.Variant
			str(&cv.Name, v.Name, p.AtName("name"))
			str(&cv.BinDir, v.BinDir, p.AtName("bin_dir"))
			str(&cv.HugePages, v.HugePages, p.AtName("huge_pages"))
			cv.Settings = settings(v.Settings, p.AtName("settings"))
			c.Variants = append(c.Variants, cv)
		}
	}
	c.Settings = settings(m.Settings, path.Root("settings"))

	wp := path.Root("workload")
	if w := m.Workload; w == nil {
		// A missing block is reported once, as such, not field by field.
		u.add(wp)
	} else {
		str(&c.Mode, w.Mode, wp.AtName("mode"))
		str(&c.Script, w.Script, wp.AtName("script"))
		num(&c.Scale, w.Scale, wp.AtName("scale"))
		num(&c.Warehouses, w.Warehouses, wp.AtName("warehouses"))
		cp := wp.AtName("clients")
		if w.Clients.IsUnknown() {
			u.add(cp)
		} else if !w.Clients.IsNull() {
			var clients []types.Int64
			d.Append(w.Clients.ElementsAs(ctx, &clients, false)...)
			for i, n := range clients {
				c.Clients = append(c.Clients, 0)
				num(&c.Clients[i], n, cp.AtListIndex(i))
			}
		}
		str(&c.Threads, w.Threads, wp.AtName("threads"))
		dur(&c.Duration, w.Duration, wp.AtName("duration"))
		abIterations(c, w, wp, &u, &d)
		str(&c.Protocol, w.Protocol, wp.AtName("protocol"))
		if wu := w.Warmup; !wu.IsUnknown() && !wu.IsNull() {
			c.WarmupAuto = wu.ValueString() == "auto"
		}
		if !c.WarmupAuto {
			dur(&c.Warmup, w.Warmup, wp.AtName("warmup"))
		}
		switch cb := w.CheckpointBefore; {
		case cb.IsUnknown():
			u.add(wp.AtName("checkpoint_before"))
		case !cb.IsNull():
			c.CheckpointBefore = cb.ValueBool()
		}
		str(&c.Restart, w.Restart, wp.AtName("restart"))
	}
	if o := m.Observe; o != nil {
		op := path.Root("observe")
		switch v := o.Counters; {
		case v.IsUnknown():
			u.add(op.AtName("counters"))
		case !v.IsNull():
			c.Counters = v.ValueBool()
		}
		dur(&c.WaitSampleInterval, o.WaitSampleInterval, op.AtName("wait_sample_interval"))
		str(&c.Profile, o.Profile, op.AtName("profile"))
		num(&c.ProfileFrequency, o.ProfileFrequency, op.AtName("profile_frequency"))
	}
	str(&c.ServerNUMA, m.ServerNUMA, path.Root("server_numa"))
	str(&c.ClientNUMA, m.ClientNUMA, path.Root("client_numa"))
	str(&c.Order, m.Order, path.Root("order"))
	switch {
	case m.Seed.IsUnknown():
		u.add(path.Root("seed"))
	case !m.Seed.IsNull():
		c.Seed, c.SeedSet = m.Seed.ValueInt64(), true
	}
	switch {
	case m.Alpha.IsUnknown():
		u.add(path.Root("alpha"))
	case !m.Alpha.IsNull():
		c.Alpha = m.Alpha.ValueFloat64()
	}
	c.Defaults()
	return c, u, d
}

// abIterations reads workload.iterations (a number or "auto") and the
// adaptive rule's attributes, which only iterations = "auto" reads: given
// with a number of iterations they are a mistake.
func abIterations(c *campaign.Config, w *abWorkloadModel, wp path.Path, u *abUnknowns, d *diag.Diagnostics) {
	ip := wp.AtName("iterations")
	switch it := w.Iterations; {
	case it.IsUnknown():
		u.add(ip)
	case it.IsNull():
	case it.ValueString() == "auto":
		c.IterationsAuto, c.Iterations = true, 0
	default:
		n, err := strconv.Atoi(it.ValueString())
		if err != nil {
			d.AddAttributeError(ip, "Invalid Iterations", fmt.Sprintf("%s is %q: want a number of runs per variant and client count, or \"auto\".", ip, it.ValueString()))
			u.add(ip)
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
			u.add(p)
		case a.v.IsNull():
		case c.IterationsAuto:
			a.set()
		case !u.covers(ip):
			d.AddAttributeError(p, "Adaptive Setting Without Adaptive Iterations", fmt.Sprintf(
				"%s applies only with %s = \"auto\"; %s is %d. Remove it, or let each client count choose its iterations with %s = \"auto\".", p, ip, ip, c.Iterations, ip))
		}
	}
}

// abValidate adds a diagnostic for each fault campaign.Validate finds in c,
// at its attribute, leaving out those about values not known yet.
func abValidate(c *campaign.Config, u abUnknowns, d *diag.Diagnostics) {
	for _, ve := range campaign.ValidationErrors(c.Validate()) {
		p := abAttrPath(ve.Path)
		skip := u.covers(p)
		for _, f := range ve.Uses {
			skip = skip || u.covers(abAttrPath(campaign.Path{Flag: f, Index: -1}))
		}
		if skip {
			continue
		}
		detail := ve.Text(func(p campaign.Path) string { return abAttrPath(p).String() }) + "."
		if len(p.Steps()) == 0 {
			d.AddError(ve.Title, detail)
			continue
		}
		d.AddAttributeError(p, ve.Title, detail)
	}
}

// abAttrPath is the attribute of a field of the definition: the field's
// attribute from campaign.Fields, then the list element, the variant's part
// and the settings key. A field Terraform does not expose has the empty
// path.
func abAttrPath(p campaign.Path) path.Path {
	attr := campaign.FieldByFlag(p.Flag).Attribute
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
