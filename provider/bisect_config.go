package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// pgbench_perf_bisect's model becomes a bisect.Config here: the runner's
// definition of a bisect, with its defaults, its validation and its
// encoding as `pgbench-runner bisect` arguments. The campaign part is read
// as pgbench_ab_benchmark reads it (abConfig), from the same blocks.

// bisectConfig builds the bisect definition of m, defaults applied. Values
// unknown at plan time keep their default and are listed in the returned
// abUnknowns.
func bisectConfig(ctx context.Context, m *perfBisectModel) (*bisect.Config, abUnknowns, diag.Diagnostics) {
	ab := &abBenchmarkModel{Settings: m.Settings, Workload: m.Workload, ServerNUMA: m.ServerNUMA, ClientNUMA: m.ClientNUMA,
		Order: m.Order, Seed: m.Seed, Alpha: m.Alpha}
	cc, u, d := abConfig(ctx, ab)
	c := bisect.DefaultConfig()
	c.Campaign = *cc
	str := func(dst *string, v types.String, attr string) {
		switch {
		case v.IsUnknown():
			u.add(path.Root(attr))
		case !v.IsNull():
			*dst = v.ValueString()
		}
	}
	str(&c.GitURL, m.GitURL, "git_url")
	str(&c.Good, m.Good, "good")
	str(&c.Bad, m.Bad, "bad")
	str(&c.Direction, m.Direction, "direction")
	switch v := m.StepRounds; {
	case v.IsUnknown():
		u.add(path.Root("step_rounds"))
	case !v.IsNull():
		c.StepRounds = int(v.ValueInt64())
	}
	if m.ConfigureFlags.IsUnknown() {
		u.add(path.Root("configure_flags"))
	}
	c.Build.ConfigureFlags = listStrings(ctx, m.ConfigureFlags)
	str(&c.Build.CFlags, m.CFlags, "cflags")
	if m.Profiling.ValueBool() {
		c.Build.CFlags = pgbuild.WithFramePointers(c.Build.CFlags)
	}
	c.Build.Jobs = int(m.Jobs.ValueInt64())
	c.Build.InstallDeps = m.InstallDeps.ValueBool()
	str(&c.Build.CCacheDir, m.CCacheDir, "ccache_dir")
	if !m.CCache.IsNull() && !m.CCache.ValueBool() {
		c.Build.CCacheDir = ""
	}
	str(&c.Build.Root, m.BuildRoot, "build_root")
	str(&c.GitCache, m.GitCache, "git_cache")
	c.Defaults()
	return c, u, d
}

// bisectValidate adds a diagnostic for each fault the bisect's validation
// finds in c, at its attribute, leaving out those about values not known
// yet: the bisect's own, then the campaign's as pgbench_ab_benchmark
// reports them.
func bisectValidate(c *bisect.Config, u abUnknowns, d *diag.Diagnostics) {
	addValidationErrors(c.Validate(), bisect.FieldByFlag, u, d)
}

// bisectDoc is the MarkdownDescription of a bisect argument, from the
// bisect's table of fields: its description and its default, then extra
// sentences.
func bisectDoc(attr string, extra ...string) string {
	for _, f := range bisect.Fields {
		if f.Attribute == attr {
			s := upperFirst(f.Usage) + "."
			if f.Default != "" {
				s += " Default `" + f.Default + "`."
			}
			for _, e := range extra {
				s += " " + e
			}
			return s
		}
	}
	panic("pgbench_perf_bisect: no bisect field at " + attr)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
