package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// pgbench_perf_bisect's model becomes a bisect.Config here: the runner's
// definition of a bisect, with its defaults, its validation and its
// encoding as `pgbench-runner bisect` arguments. The campaign part is read
// from the campaign blocks pgbench_ab_benchmark has too (campaignConfig).

// bisectConfig builds the bisect definition of m, defaults applied. Values
// unknown at plan time keep their default and are listed in the returned
// campaignUnknowns.
func bisectConfig(ctx context.Context, m *perfBisectModel) (*bisect.Config, campaignUnknowns, diag.Diagnostics) {
	cc, r := campaignConfig(ctx, &m.campaignModel)
	cc.Defaults()
	c := bisect.DefaultConfig()
	c.Campaign = *cc
	r.str(&c.GitURL, m.GitURL, path.Root("git_url"))
	r.str(&c.Good, m.Good, path.Root("good"))
	r.str(&c.Bad, m.Bad, path.Root("bad"))
	r.str(&c.Direction, m.Direction, path.Root("direction"))
	r.num(&c.StepRounds, m.StepRounds, path.Root("step_rounds"))
	if m.ConfigureFlags.IsUnknown() {
		r.u.add(path.Root("configure_flags"))
	}
	c.Build.ConfigureFlags = listStrings(ctx, m.ConfigureFlags)
	r.str(&c.Build.CFlags, m.CFlags, path.Root("cflags"))
	if m.Profiling.ValueBool() {
		c.Build.CFlags = pgbuild.WithFramePointers(c.Build.CFlags)
	}
	c.Build.Jobs = int(m.Jobs.ValueInt64())
	c.Build.InstallDeps = m.InstallDeps.ValueBool()
	r.str(&c.Build.CCacheDir, m.CCacheDir, path.Root("ccache_dir"))
	if !m.CCache.IsNull() && !m.CCache.ValueBool() {
		c.Build.CCacheDir = ""
	}
	r.str(&c.Build.Root, m.BuildRoot, path.Root("build_root"))
	r.str(&c.GitCache, m.GitCache, path.Root("git_cache"))
	c.Defaults()
	return c, r.u, r.d
}

// bisectValidate adds a diagnostic for each fault the bisect's validation
// finds in c, at its attribute, leaving out those about values not known
// yet: the bisect's own, then the campaign's as pgbench_ab_benchmark
// reports them.
func bisectValidate(c *bisect.Config, u campaignUnknowns, d *diag.Diagnostics) {
	addValidationErrors(c.Validate(), bisect.FieldByFlag, u, d)
}

// bisectDoc is the MarkdownDescription of a bisect argument, from the
// bisect's table of fields: its description and its default, then extra
// sentences.
func bisectDoc(attr string, extra ...string) string {
	for _, f := range bisect.Fields {
		if f.Attribute == attr {
			return fieldDoc(f, extra...)
		}
	}
	panic("pgbench_perf_bisect: no bisect field at " + attr)
}
