package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// pgbench_ab_benchmark's model becomes a campaign.Config here: the runner's
// definition of a campaign, with its defaults, its validation and its
// encoding as `pgbench-runner ab` arguments. The provider adds only what
// exists because of Terraform: values unknown at plan time, and blocks.

// abConfig builds the campaign definition of m, defaults applied. A value
// unknown at plan time keeps its default (or zero) and is listed in the
// returned campaignUnknowns; a value that does not convert (a duration that
// is not one) gets a diagnostic.
func abConfig(ctx context.Context, m *abBenchmarkModel) (*campaign.Config, campaignUnknowns, diag.Diagnostics) {
	c, r := campaignConfig(ctx, &m.campaignModel)
	r.variants(c, m)
	r.observe(c, m.Observe)
	c.Defaults()
	return c, r.u, r.d
}

// variants reads the variant blocks.
func (r *campaignReader) variants(c *campaign.Config, m *abBenchmarkModel) {
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

// observe reads the observe block, if any.
func (r *campaignReader) observe(c *campaign.Config, o *abObserveModel) {
	if o == nil {
		return
	}
	op := path.Root("observe")
	r.boolean(&c.Counters, o.Counters, op.AtName("counters"))
	r.dur(&c.WaitSampleInterval, o.WaitSampleInterval, op.AtName("wait_sample_interval"))
	r.str(&c.Profile, o.Profile, op.AtName("profile"))
	r.num(&c.ProfileFrequency, o.ProfileFrequency, op.AtName("profile_frequency"))
}

// abValidate adds a diagnostic for each fault campaign.Validate finds in c,
// at its attribute, leaving out those about values not known yet.
func abValidate(c *campaign.Config, u campaignUnknowns, d *diag.Diagnostics) {
	addValidationErrors(c.Validate(), campaign.FieldByFlag, u, d)
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
