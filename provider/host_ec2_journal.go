package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
)

// The Terraform side of the launch journal of ec2 hosts (see
// internal/ec2host/journal.go): what a create's identity is, the
// diagnostics of the journal, and the adoption of what a killed create
// left into the ec2 block.

// launchJournal is a create's claimed journal entry. A nil *launchJournal
// (no journal could be kept) does nothing.
type launchJournal struct {
	*ec2host.Journal
	// warned says a failed save was reported already.
	warned bool
}

// launchIgnored are the ec2 arguments that change in place, so a create's
// identity leaves them out; every other argument replaces the instance.
// (TestLaunchIgnoredAreInPlace keeps the list and the schema in step.)
var launchIgnored = map[string]bool{"hourly_price_usd": true, "poll_interval": true, "host_key_wait": true, "tags": true, "agent": true}

// launchKey names the entries of a create: a hash of its workspace, its
// install_dir and every argument of its ec2 block that replaces the
// instance. Computed attributes are unknown (or null) in every create's
// plan and hash alike, except tags_all, which the plan knows and which
// changes in place. tags changed in place only from 0.3.0 on: it counts as
// null, as it did for a create without tags before, so that the journal
// entries of such creates keep their key; so does an unset
// placement_group.
func launchKey(m *hostModel) string {
	e := m.EC2
	if e != nil {
		c := *e
		c.Tags = types.MapNull(types.StringType)
		e = &c
	}
	ignore := map[string]bool{"tags_all": true}
	for k := range launchIgnored {
		ignore[k] = k != "tags"
	}
	// placement_group came in 0.3.0: unset, it is left out, so that the
	// entries of creates without one keep their key.
	if e != nil && e.PlacementGroup.IsNull() {
		ignore["placement_group"] = true
	}
	return ec2host.LaunchKey(ec2host.Workspace(), struct {
		InstallDir types.String `tfsdk:"install_dir"`
		EC2        *ec2Model    `tfsdk:"ec2"`
	}{m.InstallDir, e}, ignore)
}

// noteKey records the key pair a create is about to import, before the
// import, so that a kill during it leaves its name behind.
func (j *launchJournal) noteKey(name, privateKey string, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	j.warnUnsaved(j.NoteKey(name, privateKey), diags)
}

// noteGroup records the security group a create is about to make, before
// CreateSecurityGroup, so that a kill during it leaves its name behind.
func (j *launchJournal) noteGroup(name, vpcID string, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	j.warnUnsaved(j.NoteGroup(name, vpcID), diags)
}

// note records what the create has made so far, from the ec2 block's
// computed values.
func (j *launchJournal) note(e *ec2Model, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	j.warnUnsaved(j.Note(ec2host.LaunchEntry{
		KeyName: e.GeneratedKeyName.ValueString(), PrivateKey: e.GeneratedPrivateKey.ValueString(),
		SecurityGroupID: e.TemporarySecurityGroupID.ValueString(), InstanceID: e.InstanceID.ValueString(),
	}), diags)
}

// warnUnsaved reports a failed save as a warning (once): the create goes
// on, only a kill would now lose track of what it made.
func (j *launchJournal) warnUnsaved(err error, diags *diag.Diagnostics) {
	if err != nil && !j.warned {
		j.warned = true
		diags.AddWarning("Launch Journal Not Updated", fmt.Sprintf("%v. The create goes on; if this apply is killed "+
			"before it finishes, terminate the instance with client token %s by hand (its dead-man switch also does).", err, j.Entry().ClientToken))
	}
}

// release ends the create's hold on its entry (ec2host.Journal.Release).
func (j *launchJournal) release(ctx context.Context) {
	if j != nil {
		j.Release(ctx)
	}
}

// claimEC2Launch claims the journal entry of m's create. Without one the
// create goes on, with a warning that a kill would not be recovered.
func claimEC2Launch(m *hostModel, diags *diag.Diagnostics) *launchJournal {
	dir := ec2host.JournalDir()
	j, err := ec2host.ClaimLaunch(dir, launchKey(m))
	if err != nil {
		diags.AddWarning("Launch Journal Unavailable", fmt.Sprintf("%v. The host is created without it: if this apply is killed "+
			"while the instance boots, the next apply launches another one and only the dead-man switch stops the first. "+
			"Make %s writable (or set TF_DATA_DIR).", err, dir))
		return nil
	}
	for _, err := range j.Unreadable() {
		diags.AddWarning("Launch Journal Entry Unreadable", fmt.Sprintf("%v. It was skipped: an apply that did not finish may have "+
			"left an instance running; look for a managed-by = pgbench instance without a host in state, terminate it, and delete the file.", err))
	}
	return &launchJournal{Journal: j}
}

// adoptMargin is how much of its life an instance must have left to be
// adopted: a quarter of max_lifetime, at most 30 minutes. An instance
// about to power itself off would fail the campaigns that follow.
func adoptMargin(e *ec2Model) time.Duration {
	life, err := time.ParseDuration(e.MaxLifetime.ValueString())
	if err != nil || life <= 0 {
		life = ec2host.DefaultMaxLifetime
	}
	return min(life/4, 30*time.Minute)
}

// ec2Resume settles what a killed create left in j before this create
// launches anything. It returns the instance to adopt, pending or running,
// with e's key pair and group filled in from the entry; or nil when there
// is none, after terminating and deleting what the leftover names, with
// j started afresh for token. ok is false when the diagnostics say why
// the create cannot go on.
func (r *hostResource) ec2Resume(ctx context.Context, c *ec2host.Client, j *launchJournal, e *ec2Model, token string, diags *diag.Diagnostics) (adopted *ec2host.Instance, ok bool) {
	if j == nil {
		return nil, true
	}
	if j.Leftover() {
		in, lc, err := r.findLeftover(ctx, c, j, e)
		if err != nil {
			j.Keep()
			diags.AddError("Earlier Launch Not Found", fmt.Sprintf("An earlier apply that did not finish launched with client token %s (%s), "+
				"but looking its instance up failed: %v. Apply again; the journal entry is kept so that no second instance is launched.",
				j.Entry().ClientToken, j.Path(), err))
			return nil, false
		}
		live := in != nil && lc == c && (in.State == "pending" || in.State == "running")
		if margin := adoptMargin(e); live && !in.ExpiresAt.IsZero() && time.Until(in.ExpiresAt) < margin {
			diags.AddWarning("EC2 Instance Not Adopted", fmt.Sprintf("Instance %s, launched by an earlier apply that did not finish, "+
				"powers itself off at %s, in less than %s: too soon to be of use. It is terminated and a new instance launched.",
				in.ID, in.ExpiresAt.UTC().Format(time.RFC3339), margin))
			live = false
		}
		if live {
			j.adopt(e)
			diags.AddWarning("EC2 Instance Adopted", fmt.Sprintf("Adopted instance %s launched by an earlier apply that did not finish "+
				"(launch journal %s); it is waited for as a new launch would be.", in.ID, j.Path()))
			return in, true
		}
		if err := j.CleanUp(ctx, lc, in); err != nil {
			j.Keep()
			diags.AddError("Earlier Launch Not Cleaned Up", fmt.Sprintf("An earlier apply that did not finish left %v. Apply again to retry; "+
				"the journal entry %s is kept.", err, j.Path()))
			return nil, false
		}
	}
	if err := j.Start(token, c.Region()); err != nil {
		diags.AddWarning("Launch Journal Not Updated", fmt.Sprintf("%v. The create goes on; if this apply is killed before it finishes, "+
			"terminate the instance with client token %s by hand (its dead-man switch also does).", err, token))
	}
	return nil, true
}

// findLeftover looks up the instance of a leftover entry, by its recorded
// id or else by its client token, in the entry's region, and returns it
// (nil when EC2 lists none) with the client of that region.
func (r *hostResource) findLeftover(ctx context.Context, c *ec2host.Client, j *launchJournal, e *ec2Model) (*ec2host.Instance, *ec2host.Client, error) {
	lc, entry := c, j.Entry()
	if entry.Region != "" && entry.Region != c.Region() {
		var err error
		if lc, err = ec2Client(ctx, r.data, entry.Region, e.PollInterval.ValueString()); err != nil {
			return nil, nil, err
		}
	}
	if id := entry.InstanceID; id != "" {
		in, err := lc.Describe(ctx, id)
		return in, lc, err
	}
	in, err := lc.FindLaunch(ctx, entry.ClientToken, len(listStrings(ctx, e.AvailabilityZones)))
	return in, lc, err
}

// adopt fills e with what the entry's create made before the instance.
func (j *launchJournal) adopt(e *ec2Model) {
	entry := j.Entry()
	if entry.KeyName != "" {
		e.GeneratedKeyName, e.GeneratedPrivateKey = types.StringValue(entry.KeyName), types.StringValue(entry.PrivateKey)
	}
	if entry.SecurityGroupID != "" {
		e.TemporarySecurityGroupID = types.StringValue(entry.SecurityGroupID)
	}
}

// launchOrAdopt launches spec, or takes adopted over as if Launch had just
// returned it (ec2host.LaunchOrAdopt), logging an adopted instance's
// unknown image.
func launchOrAdopt(ctx context.Context, c *ec2host.Client, spec ec2host.Spec, adopted *ec2host.Instance) (*ec2host.Instance, error) {
	in, imageErr, err := ec2host.LaunchOrAdopt(ctx, c, spec, adopted)
	if imageErr != nil {
		tflog.Warn(ctx, "image of adopted instance unknown", map[string]any{"instance_id": adopted.ID, "error": imageErr.Error()})
	}
	return in, err
}
