package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// journalModel is a create of an ec2 host with the given type and install
// directory.
func journalModel(typ, dir string) *hostModel {
	return &hostModel{InstallDir: types.StringValue(dir), EC2: &ec2Model{
		InstanceType: types.StringValue(typ), SSHUser: types.StringValue("root"), MaxLifetime: types.StringValue("12h"),
		PollInterval: types.StringValue("15s"), InstanceID: types.StringUnknown(),
		Image: &ec2ImageModel{Name: types.StringValue("debian-12-amd64-*")},
	}}
}

func TestLaunchKeyIsTheCreatesIdentity(t *testing.T) {
	// The key of journals written before: a change here orphans them.
	t.Setenv("TF_WORKSPACE", "default")
	if got, want := launchKey(journalModel("m6i.metal", "/opt/pgbench")), "41b5454cf10958a51d35a2ca5dbc1903"; got != want {
		t.Errorf("key = %s, want %s as before", got, want)
	}
	base := launchKey(journalModel("m6i.metal", "/opt/pgbench"))
	if got := launchKey(journalModel("m6i.metal", "/opt/pgbench")); got != base {
		t.Errorf("key of the same create = %s, want %s", got, base)
	}
	inPlace := journalModel("m6i.metal", "/opt/pgbench")
	inPlace.EC2.PollInterval, inPlace.EC2.HourlyPriceUSD = types.StringValue("1s"), types.Float64Value(9)
	inPlace.EC2.HostKeyWait = types.StringValue("30m")
	inPlace.EC2.Tags = stringMap(map[string]string{"project": "b"})
	inPlace.EC2.TagsAll = stringMap(map[string]string{"project": "b", "team": "perf"})
	if got := launchKey(inPlace); got != base {
		t.Errorf("key with other poll_interval, hourly_price_usd, host_key_wait and tags (in-place arguments) = %s, want %s", got, base)
	}
	// Workspaces share the data directory; their instances are their own.
	data := t.TempDir()
	t.Setenv("TF_DATA_DIR", data)
	t.Setenv("TF_WORKSPACE", "")
	if got := launchKey(journalModel("m6i.metal", "/opt/pgbench")); got != base {
		t.Errorf("key in the default workspace under another data directory = %s, want %s", got, base)
	}
	if err := os.WriteFile(filepath.Join(data, "environment"), []byte("staging"), 0o644); err != nil {
		t.Fatal(err)
	}
	staging := launchKey(journalModel("m6i.metal", "/opt/pgbench"))
	if staging == base {
		t.Errorf("key in workspace staging = the default workspace's %s", base)
	}
	t.Setenv("TF_WORKSPACE", "staging")
	os.Remove(filepath.Join(data, "environment"))
	if got := launchKey(journalModel("m6i.metal", "/opt/pgbench")); got != staging {
		t.Errorf("key with TF_WORKSPACE=staging = %s, want the selected workspace's %s", got, staging)
	}
	image := journalModel("m6i.metal", "/opt/pgbench")
	image.EC2.Image.Name = types.StringValue("ubuntu-*")
	placed := journalModel("m6i.metal", "/opt/pgbench")
	placed.EC2.PlacementGroup = types.StringValue("bench")
	for name, m := range map[string]*hostModel{
		"instance_type":   journalModel("r8i.metal-96xl", "/opt/pgbench"),
		"install_dir":     journalModel("m6i.metal", "/srv/pgbench"),
		"image.name":      image,
		"placement_group": placed,
	} {
		if got := launchKey(m); got == base {
			t.Errorf("key with another %s = %s, the same as the original's", name, got)
		}
	}
}

// TestLaunchJournal follows the entries of two identical creates (count =
// 2) through a kill and the next apply: each claims its own entry, the
// entries are private, a cancelled create keeps its entry, and a finished
// one removes it.
func TestLaunchJournal(t *testing.T) {
	data := t.TempDir()
	t.Setenv("TF_DATA_DIR", data)
	dir := ec2host.JournalDir()
	if want := filepath.Join(data, "pgbench", "launches"); dir != want {
		t.Fatalf("journal directory = %s, want %s (under TF_DATA_DIR)", dir, want)
	}
	var diags diag.Diagnostics
	key := launchKey(journalModel("m6i.metal", "/opt/pgbench"))

	a := claimEC2Launch(journalModel("m6i.metal", "/opt/pgbench"), &diags)
	b := claimEC2Launch(journalModel("m6i.metal", "/opt/pgbench"), &diags)
	if a == nil || b == nil || diags.HasError() || len(diags) != 0 {
		t.Fatalf("claims = %v, %v with %v; want two entries without diagnostics", a, b, diags)
	}
	if want := filepath.Join(dir, key+".json"); a.Path() != want {
		t.Errorf("first claim = %s, want %s", a.Path(), want)
	}
	if want := filepath.Join(dir, key+"-1.json"); b.Path() != want {
		t.Errorf("second claim while the first is held = %s, want %s", b.Path(), want)
	}
	if a.Leftover() || b.Leftover() {
		t.Errorf("fresh claims say leftover: %v, %v", a.Leftover(), b.Leftover())
	}
	if err := a.Start("pgbench-tok-a", "us-east-2"); err != nil {
		t.Fatal(err)
	}
	if err := b.Start("pgbench-tok-b", "us-east-2"); err != nil {
		t.Fatal(err)
	}
	a.noteKey("pgbench-a", "PRIVATE KEY A", &diags)
	a.note(&ec2Model{GeneratedKeyName: types.StringValue("pgbench-a"), GeneratedPrivateKey: types.StringValue("PRIVATE KEY A"),
		TemporarySecurityGroupID: types.StringValue("sg-0a"), InstanceID: types.StringValue("i-0a")}, &diags)
	for _, j := range []*launchJournal{a, b} {
		fi, err := os.Stat(j.Path())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600 (it holds a private key)", j.Path(), fi.Mode().Perm())
		}
	}

	// The apply is killed: a's create is cancelled, b's provider dies.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	a.release(cancelled)
	b.Close()
	if _, err := os.Stat(a.Path()); err != nil {
		t.Fatalf("entry of a cancelled create: %v, want it kept for the next apply", err)
	}

	// The next apply: each create takes over one leftover.
	a2 := claimEC2Launch(journalModel("m6i.metal", "/opt/pgbench"), &diags)
	b2 := claimEC2Launch(journalModel("m6i.metal", "/opt/pgbench"), &diags)
	c2 := claimEC2Launch(journalModel("m6i.metal", "/opt/pgbench"), &diags)
	if a2 == nil || b2 == nil || c2 == nil {
		t.Fatalf("claims after the kill = %v, %v, %v; %v", a2, b2, c2, diags)
	}
	if !a2.Leftover() || a2.Entry().ClientToken != "pgbench-tok-a" || a2.Entry().InstanceID != "i-0a" || a2.Entry().SecurityGroupID != "sg-0a" ||
		a2.Entry().KeyName != "pgbench-a" || a2.Entry().PrivateKey != "PRIVATE KEY A" {
		t.Errorf("first claim after the kill = %+v (leftover %v), want a's record", a2.Entry(), a2.Leftover())
	}
	if !b2.Leftover() || b2.Entry().ClientToken != "pgbench-tok-b" {
		t.Errorf("second claim after the kill = %+v (leftover %v), want b's record", b2.Entry(), b2.Leftover())
	}
	if c2.Leftover() || c2.Path() != filepath.Join(dir, key+"-2.json") {
		t.Errorf("third claim = %s (leftover %v), want a fresh %s-2.json", c2.Path(), c2.Leftover(), key)
	}
	for _, j := range []*launchJournal{a2, b2, c2} {
		j.release(context.Background())
		if _, err := os.Stat(j.Path()); !os.IsNotExist(err) {
			t.Errorf("entry %s after its create finished: %v, want removed", j.Path(), err)
		}
	}
}

// resumeRegion is a simulated region, a client of it, and the key pair
// pgbench-old a killed create imported there.
func resumeRegion(t *testing.T) (*ec2sim.Server, *ec2host.Client, ec2host.KeyPair) {
	t.Helper()
	sim := ec2TestRegion(t)
	c, err := ec2host.New(context.Background(), ec2host.Config{Region: sim.Region(), Endpoint: sim.URL,
		PollInterval: 50 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(context.Background(), "pgbench-old", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	return sim, c, kp
}

// resumeEnv is a simulated region with one launch as a killed create left
// it: a key pair, a temporary group, an instance launched with token, and
// the journal entry recording them (the instance id only if recordID).
func resumeEnv(t *testing.T, token string, recordID bool, lifetime time.Duration) (*ec2sim.Server, *ec2host.Client, *launchJournal, string) {
	t.Helper()
	sim, c, kp := resumeRegion(t)
	ctx := context.Background()
	sg, err := c.CreateSSHSecurityGroup(ctx, "pgbench-old", "", []string{"10.200.0.0/16"}, 22)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "m6i.metal", ImageName: ec2TestImage, ImageOwners: []string{ec2TestOwner},
		KeyName: "pgbench-old", SecurityGroupIDs: []string{sg}, ClientToken: token, MaxLifetime: lifetime})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := claimTestLaunch(dir)
	if err != nil {
		t.Fatal(err)
	}
	var diags diag.Diagnostics
	if err := j.Start(token, sim.Region()); err != nil {
		t.Fatal(err)
	}
	j.noteKey("pgbench-old", string(kp.PrivateKeyPEM), &diags)
	e := &ec2Model{TemporarySecurityGroupID: types.StringValue(sg)}
	if recordID {
		e.InstanceID = types.StringValue(in.ID)
	}
	j.note(e, &diags)
	j.Close() // the kill
	if j, err = claimTestLaunch(dir); err != nil || !j.Leftover() {
		t.Fatalf("claim after the kill = %+v, %v; want the leftover", j, err)
	}
	t.Cleanup(j.Close)
	return sim, c, j, in.ID
}

// claimTestLaunch claims an entry of key k in dir.
func claimTestLaunch(dir string) (*launchJournal, error) {
	j, err := ec2host.ClaimLaunch(dir, "k")
	if err != nil {
		return nil, err
	}
	return &launchJournal{Journal: j}, nil
}

// TestEC2ResumeAdoptsByToken: killed before the instance id was recorded,
// the next create still finds the instance by its client token and adopts
// it with the entry's key pair and group.
func TestEC2ResumeAdoptsByToken(t *testing.T) {
	token := ec2host.NewClientToken()
	sim, c, j, id := resumeEnv(t, token, false, 0)
	var diags diag.Diagnostics
	e := &ec2Model{}
	adopted, ok := (&hostResource{}).ec2Resume(context.Background(), c, j, e, ec2host.NewClientToken(), &diags)
	if !ok || adopted == nil || adopted.ID != id {
		t.Fatalf("ec2Resume = %+v, %v (%v); want instance %s adopted", adopted, ok, diags, id)
	}
	if e.GeneratedKeyName.ValueString() != "pgbench-old" || e.GeneratedPrivateKey.ValueString() == "" || e.TemporarySecurityGroupID.IsNull() {
		t.Errorf("adopted block = key %s, group %s; want the entry's key pair and group", e.GeneratedKeyName, e.TemporarySecurityGroupID)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Detail(), "Adopted instance "+id+" launched by an earlier apply that did not finish") {
		t.Errorf("diagnostics = %v, want the adoption warning", diags)
	}
	if j.Entry().ClientToken != token || len(sim.Instances()) != 1 {
		t.Errorf("entry token %s, instances %d; want the old token %s kept and one instance", j.Entry().ClientToken, len(sim.Instances()), token)
	}
}

// TestEC2ResumeCleansUpGoneLaunch: when the killed create's instance is
// gone, its key pair and group are deleted and the entry starts afresh.
func TestEC2ResumeCleansUpGoneLaunch(t *testing.T) {
	sim, c, j, id := resumeEnv(t, ec2host.NewClientToken(), true, 0)
	ctx := context.Background()
	if err := c.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	var diags diag.Diagnostics
	adopted, ok := (&hostResource{}).ec2Resume(ctx, c, j, &ec2Model{}, "pgbench-new", &diags)
	if !ok || adopted != nil || diags.HasError() {
		t.Fatalf("ec2Resume = %+v, %v (%v); want nothing to adopt", adopted, ok, diags)
	}
	if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
		t.Errorf("after resuming key pairs = %v, groups = %v; want the leftovers deleted", k, g)
	}
	b, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if j.Leftover() || !strings.Contains(string(b), `"pgbench-new"`) || strings.Contains(string(b), id) {
		t.Errorf("entry after resuming = %s (leftover %v), want a fresh one with the new token", b, j.Leftover())
	}
}

// TestLaunchIgnoredAreInPlace: the arguments a create's identity leaves
// out are exactly the ec2 arguments that change in place; one that
// replaces the instance but were left out would let a create adopt an
// instance of another configuration, and an in-place one left in would
// launch a second instance after a kill and a change of it.
func TestLaunchIgnoredAreInPlace(t *testing.T) {
	replaces := func(a schema.Attribute) (bool, bool) {
		var descs []string
		switch a := a.(type) {
		case schema.StringAttribute:
			descs = modifierDescriptions(a.PlanModifiers)
		case schema.ListAttribute:
			descs = modifierDescriptions(a.PlanModifiers)
		case schema.MapAttribute:
			descs = modifierDescriptions(a.PlanModifiers)
		case schema.Float64Attribute:
			descs = modifierDescriptions(a.PlanModifiers)
		case schema.Int64Attribute:
			descs = modifierDescriptions(a.PlanModifiers)
		case schema.BoolAttribute:
			descs = modifierDescriptions(a.PlanModifiers)
		default:
			return false, false
		}
		for _, d := range descs {
			if strings.Contains(d, "destroy and recreate") || strings.Contains(d, "replaces the instance") {
				return true, true
			}
		}
		return false, true
	}
	for name, a := range ec2BlockSchema().Attributes {
		if !a.IsOptional() && !a.IsRequired() {
			continue // computed only: never an argument
		}
		r, known := replaces(a)
		if !known {
			t.Errorf("argument %s has a type this test does not read", name)
			continue
		}
		if r == launchIgnored[name] {
			t.Errorf("argument %s: replaces the instance = %v, left out of the launch key = %v; want exactly the in-place ones left out", name, r, launchIgnored[name])
		}
	}
}

// modifierDescriptions are the descriptions of an attribute's plan
// modifiers.
func modifierDescriptions[M interface{ Description(context.Context) string }](ms []M) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Description(context.Background()))
	}
	return out
}

// TestEC2ResumeCleansUpKilledInGroupCreation: a create killed inside
// CreateSecurityGroup has journalled the group's name but not its id, and
// launched nothing; the next create finds the group by name and deletes
// it with the key pair.
func TestEC2ResumeCleansUpKilledInGroupCreation(t *testing.T) {
	sim, c, kp := resumeRegion(t)
	ctx := context.Background()
	other, err := c.CreateSSHSecurityGroup(ctx, "someone-elses", "", []string{"10.200.0.0/16"}, 22)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := claimTestLaunch(dir)
	if err != nil {
		t.Fatal(err)
	}
	var diags diag.Diagnostics
	if err := j.Start(ec2host.NewClientToken(), sim.Region()); err != nil {
		t.Fatal(err)
	}
	j.noteKey("pgbench-old", string(kp.PrivateKeyPEM), &diags)
	j.noteGroup("pgbench-old", "", &diags)
	// EC2 made the group; the answer never reached the killed create.
	if _, err := c.CreateSSHSecurityGroup(ctx, "pgbench-old", "", []string{"10.200.0.0/16"}, 22); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if j, err = claimTestLaunch(dir); err != nil || !j.Leftover() {
		t.Fatalf("claim after the kill = %+v, %v; want the leftover", j, err)
	}
	t.Cleanup(j.Close)
	adopted, ok := (&hostResource{}).ec2Resume(ctx, c, j, &ec2Model{}, "pgbench-new", &diags)
	if !ok || adopted != nil || diags.HasError() {
		t.Fatalf("ec2Resume = %+v, %v (%v); want nothing to adopt", adopted, ok, diags)
	}
	if k := sim.KeyPairs(); len(k) != 0 {
		t.Errorf("key pairs after resuming = %v, want the leftover deleted", k)
	}
	if g := sim.SecurityGroups(); len(g) != 1 || g[other] == nil {
		t.Errorf("groups after resuming = %v, want only %s (not the create's) left", g, other)
	}
}

// TestEC2ResumeSkipsExpiringInstance: an earlier create's instance that
// powers itself off soon is not adopted but terminated, with its key pair
// and group, and the create launches afresh.
func TestEC2ResumeSkipsExpiringInstance(t *testing.T) {
	sim, c, j, id := resumeEnv(t, ec2host.NewClientToken(), true, 2*time.Minute)
	var diags diag.Diagnostics
	e := &ec2Model{MaxLifetime: types.StringValue("1h")} // adopts with 15 minutes left at the least
	adopted, ok := (&hostResource{}).ec2Resume(context.Background(), c, j, e, "pgbench-new", &diags)
	if !ok || adopted != nil || diags.HasError() {
		t.Fatalf("ec2Resume = %+v, %v (%v); want the expiring instance not adopted", adopted, ok, diags)
	}
	if len(diags) != 1 || diags[0].Summary() != "EC2 Instance Not Adopted" || !strings.Contains(diags[0].Detail(), id) {
		t.Errorf("diagnostics = %v, want one warning naming %s", diags, id)
	}
	if in, _ := sim.Instance(id); in.State != ec2sim.Terminated {
		t.Errorf("expiring instance %s is %s, want terminated", id, in.State)
	}
	if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
		t.Errorf("after resuming key pairs = %v, groups = %v; want the leftovers deleted", k, g)
	}
}
