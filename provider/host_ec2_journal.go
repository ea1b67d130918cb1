package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// The launch journal of ec2 hosts. A terraform apply killed while a create
// waits for its instance saves no state, so the instance would be known
// only to its dead-man switch and the next apply would launch a second
// one. Each create therefore keeps, on the machine that runs Terraform, a
// small entry of what it has made so far (client token, key pair, group,
// instance id), locked for as long as it runs. A create that finds an
// unlocked entry of its own identity was preceded by one that was killed:
// it adopts that instance, or cleans up after it. The entry goes when the
// create returns its state to Terraform.

// launchSlots bounds the entries of one identity: creates with identical
// arguments (count) claim <key>.json, <key>-1.json, ...
const launchSlots = 64

// launchEntry is what the journal keeps of one create.
type launchEntry struct {
	ClientToken     string `json:"client_token"`
	Region          string `json:"region"`
	KeyName         string `json:"key_name,omitempty"`
	PrivateKey      string `json:"private_key,omitempty"`
	SecurityGroupID string `json:"security_group_id,omitempty"`
	// SecurityGroupName and SecurityGroupVPC name the group a create is
	// about to make, before EC2 gives it an id.
	SecurityGroupName string    `json:"security_group_name,omitempty"`
	SecurityGroupVPC  string    `json:"security_group_vpc,omitempty"`
	InstanceID        string    `json:"instance_id,omitempty"`
	Started           time.Time `json:"started"`
}

// launchJournal is one claimed entry; its file stays open and flocked
// until release. A nil *launchJournal (no journal could be kept) does
// nothing.
type launchJournal struct {
	path  string
	f     *os.File
	entry launchEntry
	// leftover says the entry was written by a create that did not finish.
	leftover bool
	// keep makes release keep the entry: it still names what an earlier
	// create left and this one could not settle.
	keep   bool
	warned bool
	// unreadable are the entries of the same key that were skipped.
	unreadable []error
}

// launchJournalDir is where the entries live: the Terraform data directory
// of the working directory, $TF_DATA_DIR or else .terraform in the
// provider's working directory, which Terraform sets to the root module's.
func launchJournalDir() string {
	return filepath.Join(tfDataDir(), "pgbench", "launches")
}

func tfDataDir() string {
	if dir := os.Getenv("TF_DATA_DIR"); dir != "" {
		return dir
	}
	return ".terraform"
}

// tfWorkspace is the Terraform workspace the create runs in: TF_WORKSPACE,
// else the one `terraform workspace select` wrote into the data directory.
// Workspaces share the data directory, and one workspace's instance is
// never another's to adopt.
func tfWorkspace() string {
	if ws := os.Getenv("TF_WORKSPACE"); ws != "" {
		return ws
	}
	if b, err := os.ReadFile(filepath.Join(tfDataDir(), "environment")); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// launchIgnored are the ec2 arguments that change in place, so a create's
// identity leaves them out; every other argument replaces the instance.
// (TestLaunchIgnoredAreInPlace keeps the list and the schema in step.)
var launchIgnored = map[string]bool{"hourly_price_usd": true, "poll_interval": true, "host_key_wait": true}

// launchKey names the entries of a create: a hash of its workspace, its
// install_dir and every argument of its ec2 block that replaces the
// instance. It holds
// no random value, so the apply after a kill computes the same key.
// Computed attributes are unknown (or null) in every create's plan and
// hash alike.
func launchKey(m *hostModel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace=%s\n", tfWorkspace())
	fmt.Fprintf(&b, "install_dir=%s\n", m.InstallDir.String())
	identity(&b, "ec2", reflect.ValueOf(m.EC2))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// identity writes the tfsdk fields of a model struct (pointer or value),
// nested blocks included, one name=value per line.
func identity(b *strings.Builder, prefix string, v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			fmt.Fprintf(b, "%s=null\n", prefix)
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		fmt.Fprintf(b, "%s=%v\n", prefix, v.Interface())
		return
	}
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Tag.Get("tfsdk")
		if name == "" || name == "-" || launchIgnored[name] {
			continue
		}
		if a, ok := v.Field(i).Interface().(attr.Value); ok {
			fmt.Fprintf(b, "%s.%s=%s\n", prefix, name, a.String())
			continue
		}
		identity(b, prefix+"."+name, v.Field(i))
	}
}

// claimLaunch claims an entry of key in dir. An unlocked entry that holds
// a create's record comes first: its create was killed, and this one
// takes its place. Otherwise it claims the first slot that no running
// create holds, as a fresh entry.
func claimLaunch(dir, key string) (*launchJournal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the launch journal %s: %w", dir, err)
	}
	paths := make([]string, launchSlots)
	for i := range paths {
		paths[i] = filepath.Join(dir, key+".json")
		if i > 0 {
			paths[i] = filepath.Join(dir, key+"-"+strconv.Itoa(i)+".json")
		}
	}
	// An unreadable entry is skipped, and reported, rather than
	// overwritten: it may be all that is left of a running instance.
	var unreadable []error
	claim := func(p string, create bool) (*launchJournal, error) {
		j, err := lockLaunch(p, create)
		var ue *unreadableLaunch
		if errors.As(err, &ue) {
			unreadable = append(unreadable, err)
			return nil, nil
		}
		if j != nil {
			j.unreadable = unreadable
		}
		return j, err
	}
	for _, p := range paths {
		j, err := claim(p, false)
		if err != nil {
			return nil, err
		}
		if j != nil && j.leftover {
			return j, nil
		}
		j.close()
	}
	unreadable = nil
	for _, p := range paths {
		j, err := claim(p, true)
		if err != nil {
			return nil, err
		}
		if j != nil {
			return j, nil
		}
	}
	return nil, fmt.Errorf("all %d launch journal entries of key %s in %s are held by running creates", launchSlots, key, dir)
}

// lockLaunch opens and flocks the entry at path, creating it (mode 0600:
// it holds a private key, as the state does) when create is set. It
// returns nil when another create holds the entry, or when it does not
// exist and create is unset.
func lockLaunch(path string, create bool) (*launchJournal, error) {
	for {
		flags := os.O_RDWR
		if create {
			flags |= os.O_CREATE
		}
		f, err := os.OpenFile(path, flags, 0o600)
		if errors.Is(err, os.ErrNotExist) && !create {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("open launch journal entry: %w", err)
		}
		if _, err := filelock.Try(f, filelock.Exclusive); err != nil {
			f.Close()
			if errors.Is(err, filelock.ErrHeld) {
				return nil, nil
			}
			return nil, fmt.Errorf("lock launch journal entry: %w", err)
		}
		// The holder before us may have removed the file while we opened
		// it: a lock on a removed file guards nothing, so open it again.
		if fi, err := f.Stat(); err == nil {
			if pi, err := os.Stat(path); err == nil && os.SameFile(fi, pi) {
				return readLaunch(path, f)
			}
		}
		f.Close()
		if !create {
			return nil, nil
		}
	}
}

// readLaunch reads a locked entry. An empty file is a fresh entry (its
// create was killed before it wrote, so it made nothing). Only the first
// JSON value counts: save writes over the old record and then truncates,
// so a kill in between leaves the new record followed by a stale tail.
func readLaunch(path string, f *os.File) (*launchJournal, error) {
	j := &launchJournal{path: path, f: f}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read launch journal entry %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return j, nil
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&j.entry); err != nil || j.entry.ClientToken == "" {
		f.Close()
		return nil, &unreadableLaunch{path: path, err: err}
	}
	j.leftover = true
	return j, nil
}

// unreadableLaunch is an entry whose record cannot be read.
type unreadableLaunch struct {
	path string
	err  error // nil: a record without a client token
}

func (e *unreadableLaunch) Error() string {
	why := "it has no client token"
	if e.err != nil {
		why = e.err.Error()
	}
	return fmt.Sprintf("launch journal entry %s is unreadable (%s)", e.path, why)
}

// start makes j a fresh entry for a create that launches with token in
// region, and writes it before anything is created.
func (j *launchJournal) start(token, region string) error {
	if j == nil {
		return nil
	}
	j.entry, j.leftover = launchEntry{ClientToken: token, Region: region, Started: time.Now().UTC()}, false
	return j.save()
}

// save writes the entry over the file's content and syncs it.
func (j *launchJournal) save() error {
	b, err := json.MarshalIndent(j.entry, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := j.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write launch journal entry %s: %w", j.path, err)
	}
	if err := j.f.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("write launch journal entry %s: %w", j.path, err)
	}
	return j.f.Sync()
}

// noteKey records the key pair a create is about to import, before the
// import, so that a kill during it leaves its name behind.
func (j *launchJournal) noteKey(name, privateKey string, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	j.entry.KeyName, j.entry.PrivateKey = name, privateKey
	j.saveOrWarn(diags)
}

// noteGroup records the security group a create is about to make, before
// CreateSecurityGroup, so that a kill during it leaves its name behind.
func (j *launchJournal) noteGroup(name, vpcID string, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	j.entry.SecurityGroupName, j.entry.SecurityGroupVPC = name, vpcID
	j.saveOrWarn(diags)
}

// note records what the create has made so far, from the ec2 block's
// computed values.
func (j *launchJournal) note(e *ec2Model, diags *diag.Diagnostics) {
	if j == nil {
		return
	}
	if v := e.GeneratedKeyName.ValueString(); v != "" {
		j.entry.KeyName, j.entry.PrivateKey = v, e.GeneratedPrivateKey.ValueString()
	}
	if v := e.TemporarySecurityGroupID.ValueString(); v != "" {
		j.entry.SecurityGroupID = v
	}
	if v := e.InstanceID.ValueString(); v != "" {
		j.entry.InstanceID = v
	}
	j.saveOrWarn(diags)
}

// saveOrWarn saves the entry; a failure is a warning (once): the create
// goes on, only a kill would now lose track of what it made.
func (j *launchJournal) saveOrWarn(diags *diag.Diagnostics) {
	if err := j.save(); err != nil && !j.warned {
		j.warned = true
		diags.AddWarning("Launch Journal Not Updated", fmt.Sprintf("%v. The create goes on; if this apply is killed "+
			"before it finishes, terminate the instance with client token %s by hand (its dead-man switch also does).", err, j.entry.ClientToken))
	}
}

// release ends the create's hold on its entry. The entry is removed,
// since the state the create returns now holds the instance (or nothing
// was left), unless ctx was cancelled: then Terraform may be gone and the
// state lost with it, and the entry is kept for the next apply.
func (j *launchJournal) release(ctx context.Context) {
	if j == nil {
		return
	}
	if !j.keep && !errors.Is(ctx.Err(), context.Canceled) {
		os.Remove(j.path)
	}
	j.close()
}

// close unlocks the entry and keeps it.
func (j *launchJournal) close() {
	if j != nil {
		j.f.Close()
	}
}

// claimEC2Launch claims the journal entry of m's create. Without one the
// create goes on, with a warning that a kill would not be recovered.
func claimEC2Launch(m *hostModel, diags *diag.Diagnostics) *launchJournal {
	dir := launchJournalDir()
	j, err := claimLaunch(dir, launchKey(m))
	if err != nil {
		diags.AddWarning("Launch Journal Unavailable", fmt.Sprintf("%v. The host is created without it: if this apply is killed "+
			"while the instance boots, the next apply launches another one and only the dead-man switch stops the first. "+
			"Make %s writable (or set TF_DATA_DIR).", err, dir))
		return nil
	}
	for _, err := range j.unreadable {
		diags.AddWarning("Launch Journal Entry Unreadable", fmt.Sprintf("%v. It was skipped: an apply that did not finish may have "+
			"left an instance running; look for a managed-by = pgbench instance without a host in state, terminate it, and delete the file.", err))
	}
	return j
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
	if j.leftover {
		in, lc, err := r.findLeftover(ctx, c, j, e)
		if err != nil {
			j.keep = true
			diags.AddError("Earlier Launch Not Found", fmt.Sprintf("An earlier apply that did not finish launched with client token %s (%s), "+
				"but looking its instance up failed: %v. Apply again; the journal entry is kept so that no second instance is launched.",
				j.entry.ClientToken, j.path, err))
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
				"(launch journal %s); it is waited for as a new launch would be.", in.ID, j.path))
			return in, true
		}
		if err := j.cleanUp(ctx, lc, in); err != nil {
			j.keep = true
			diags.AddError("Earlier Launch Not Cleaned Up", fmt.Sprintf("An earlier apply that did not finish left %v. Apply again to retry; "+
				"the journal entry %s is kept.", err, j.path))
			return nil, false
		}
	}
	if err := j.start(token, c.Region()); err != nil {
		diags.AddWarning("Launch Journal Not Updated", fmt.Sprintf("%v. The create goes on; if this apply is killed before it finishes, "+
			"terminate the instance with client token %s by hand (its dead-man switch also does).", err, token))
	}
	return nil, true
}

// findLeftover looks up the instance of a leftover entry, by its recorded
// id or else by its client token, in the entry's region, and returns it
// (nil when EC2 lists none) with the client of that region.
func (r *hostResource) findLeftover(ctx context.Context, c *ec2host.Client, j *launchJournal, e *ec2Model) (*ec2host.Instance, *ec2host.Client, error) {
	lc := c
	if j.entry.Region != "" && j.entry.Region != c.Region() {
		var err error
		if lc, err = ec2Client(ctx, r.data, j.entry.Region, e.PollInterval.ValueString()); err != nil {
			return nil, nil, err
		}
	}
	if id := j.entry.InstanceID; id != "" {
		in, err := lc.Describe(ctx, id)
		return in, lc, err
	}
	in, err := lc.FindLaunch(ctx, j.entry.ClientToken, len(listStrings(ctx, e.AvailabilityZones)))
	return in, lc, err
}

// adopt fills e with what the entry's create made before the instance.
func (j *launchJournal) adopt(e *ec2Model) {
	if j.entry.KeyName != "" {
		e.GeneratedKeyName, e.GeneratedPrivateKey = types.StringValue(j.entry.KeyName), types.StringValue(j.entry.PrivateKey)
	}
	if j.entry.SecurityGroupID != "" {
		e.TemporarySecurityGroupID = types.StringValue(j.entry.SecurityGroupID)
	}
}

// cleanUp terminates a leftover instance that cannot be adopted (stopped,
// shutting down, or in another region than the create's now) and deletes
// the key pair and group the entry names, which nothing else would.
func (j *launchJournal) cleanUp(ctx context.Context, c *ec2host.Client, in *ec2host.Instance) error {
	if in != nil && in.State != "terminated" {
		if err := c.Terminate(ctx, in.ID); err != nil {
			return fmt.Errorf("instance %s, which could not be terminated: %w", in.ID, err)
		}
	}
	sg := j.entry.SecurityGroupID
	if sg == "" && j.entry.SecurityGroupName != "" {
		// Killed inside CreateSecurityGroup: the group may exist.
		id, err := c.FindSecurityGroup(ctx, j.entry.SecurityGroupName, j.entry.SecurityGroupVPC)
		if err != nil {
			return fmt.Errorf("security group %s, which could not be looked up: %w", j.entry.SecurityGroupName, err)
		}
		sg = id
	}
	if sg != "" {
		if err := c.DeleteSecurityGroup(ctx, sg); err != nil {
			return fmt.Errorf("security group %s, which could not be deleted: %w", sg, err)
		}
	}
	if k := j.entry.KeyName; k != "" {
		if err := c.DeleteKeyPair(ctx, k); err != nil {
			return fmt.Errorf("key pair %s, which could not be deleted: %w", k, err)
		}
	}
	return nil
}

// launchOrAdopt launches spec, or takes adopted over as if Launch had just
// returned it, OnLaunched included.
func launchOrAdopt(ctx context.Context, c *ec2host.Client, spec ec2host.Spec, adopted *ec2host.Instance) (*ec2host.Instance, error) {
	if adopted == nil {
		return c.Launch(ctx, spec)
	}
	spec.OnLaunched(adopted.ID)
	if adopted.Image.ID == "" {
		// Its image names the login user, as for a fresh launch.
		// Not knowing it is no reason to drop the instance: the login
		// then says which user to set.
		if im, err := c.DescribeImage(ctx, adopted.ImageID); err == nil {
			adopted.Image = im
		} else {
			tflog.Warn(ctx, "image of adopted instance unknown", map[string]any{"instance_id": adopted.ID, "error": err.Error()})
		}
	}
	return adopted, nil
}

// forgetLaunch removes the unlocked entries that name instance id: Read
// found it in state, so the create that made it did return its state (a
// stop cancels a create's context as a kill does, and its entry was
// kept), and no later create may adopt it.
func forgetLaunch(id string) {
	dir := launchJournalDir()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range paths {
		j, err := lockLaunch(p, false)
		if err != nil || j == nil {
			continue
		}
		if j.entry.InstanceID == id {
			os.Remove(p)
		}
		j.close()
	}
}
