package ec2host

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

// LaunchEntry is what the journal keeps of one create.
type LaunchEntry struct {
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

// Journal is one claimed entry of the launch journal; its file stays open
// and flocked until Release or Close. A nil *Journal (no journal could be
// kept) does nothing.
type Journal struct {
	path  string
	f     *os.File
	entry LaunchEntry
	// leftover says the entry was written by a create that did not finish.
	leftover bool
	// keep makes release keep the entry: it still names what an earlier
	// create left and this one could not settle.
	keep bool
	// unreadable are the entries of the same key that were skipped.
	unreadable []error
}

// JournalDir is where the entries live: the Terraform data directory of
// the working directory, $TF_DATA_DIR or else .terraform in the
// provider's working directory, which Terraform sets to the root module's.
func JournalDir() string {
	return filepath.Join(tfDataDir(), "pgbench", "launches")
}

func tfDataDir() string {
	if dir := os.Getenv("TF_DATA_DIR"); dir != "" {
		return dir
	}
	return ".terraform"
}

// Workspace is the Terraform workspace the create runs in: TF_WORKSPACE,
// else the one `terraform workspace select` wrote into the data directory.
// Workspaces share the data directory, and one workspace's instance is
// never another's to adopt.
func Workspace() string {
	if ws := os.Getenv("TF_WORKSPACE"); ws != "" {
		return ws
	}
	if b, err := os.ReadFile(filepath.Join(tfDataDir(), "environment")); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// LaunchKey names the journal entries of a create: a hash of its
// workspace and of v, a struct whose fields with a tfsdk tag are the
// create's arguments, except those named in ignore. A field that is an
// attribute value (it can be null or unknown) counts by its String; a
// nested struct, or pointer to one, counts by its own tagged fields. The
// key holds no random value, so the apply after a kill computes the same
// one.
func LaunchKey(workspace string, v any, ignore map[string]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace=%s\n", workspace)
	identity(&b, "", reflect.ValueOf(v), ignore)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// attrValue is what identity reads of a Terraform attribute value.
type attrValue interface {
	IsNull() bool
	IsUnknown() bool
	String() string
}

// identity writes the tagged fields of a struct (pointer or value),
// nested structs included, one name=value per line. The fields of the
// outermost struct (prefix "") are named without a prefix.
func identity(b *strings.Builder, prefix string, v reflect.Value, ignore map[string]bool) {
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
		if name == "" || name == "-" || ignore[name] {
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		if a, ok := v.Field(i).Interface().(attrValue); ok {
			fmt.Fprintf(b, "%s=%s\n", name, a.String())
			continue
		}
		identity(b, name, v.Field(i), ignore)
	}
}

// ClaimLaunch claims an entry of key in dir. An unlocked entry that holds
// a create's record comes first: its create was killed, and this one
// takes its place. Otherwise it claims the first slot that no running
// create holds, as a fresh entry.
func ClaimLaunch(dir, key string) (*Journal, error) {
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
	claim := func(p string, create bool) (*Journal, error) {
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
		j.Close()
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

// LockLaunch opens and flocks the entry at path, as a create that claims
// it would, without creating it. It returns nil when another create holds
// the entry or it does not exist.
func LockLaunch(path string) (*Journal, error) {
	return lockLaunch(path, false)
}

// lockLaunch opens and flocks the entry at path, creating it (mode 0600:
// it holds a private key, as the state does) when create is set. It
// returns nil when another create holds the entry, or when it does not
// exist and create is unset.
func lockLaunch(path string, create bool) (*Journal, error) {
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
func readLaunch(path string, f *os.File) (*Journal, error) {
	j := &Journal{path: path, f: f}
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

// Path is the file of the entry.
func (j *Journal) Path() string { return j.path }

// Entry is the entry's record as read or last noted.
func (j *Journal) Entry() LaunchEntry { return j.entry }

// Leftover reports whether the entry was written by a create that did not
// finish.
func (j *Journal) Leftover() bool { return j.leftover }

// Unreadable are the errors of the entries of the same key that the claim
// skipped because their records cannot be read.
func (j *Journal) Unreadable() []error { return j.unreadable }

// Keep makes Release keep the entry: it still names what an earlier
// create left and this one could not settle.
func (j *Journal) Keep() { j.keep = true }

// Start makes j a fresh entry for a create that launches with token in
// region, and writes it before anything is created.
func (j *Journal) Start(token, region string) error {
	if j == nil {
		return nil
	}
	j.entry, j.leftover = LaunchEntry{ClientToken: token, Region: region, Started: time.Now().UTC()}, false
	return j.save()
}

// save writes the entry over the file's content and syncs it.
func (j *Journal) save() error {
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

// NoteKey records the key pair a create is about to import, before the
// import, so that a kill during it leaves its name behind.
func (j *Journal) NoteKey(name, privateKey string) error {
	if j == nil {
		return nil
	}
	j.entry.KeyName, j.entry.PrivateKey = name, privateKey
	return j.save()
}

// NoteGroup records the security group a create is about to make, before
// CreateSecurityGroup, so that a kill during it leaves its name behind.
func (j *Journal) NoteGroup(name, vpcID string) error {
	if j == nil {
		return nil
	}
	j.entry.SecurityGroupName, j.entry.SecurityGroupVPC = name, vpcID
	return j.save()
}

// Note records what the create has made so far: the key pair (KeyName
// with PrivateKey), SecurityGroupID and InstanceID of made, each where
// it is not empty. The other fields of made are not read.
func (j *Journal) Note(made LaunchEntry) error {
	if j == nil {
		return nil
	}
	if made.KeyName != "" {
		j.entry.KeyName, j.entry.PrivateKey = made.KeyName, made.PrivateKey
	}
	if made.SecurityGroupID != "" {
		j.entry.SecurityGroupID = made.SecurityGroupID
	}
	if made.InstanceID != "" {
		j.entry.InstanceID = made.InstanceID
	}
	return j.save()
}

// Release ends the create's hold on its entry. The entry is removed,
// since the state the create returns now holds the instance (or nothing
// was left), unless ctx was cancelled: then Terraform may be gone and the
// state lost with it, and the entry is kept for the next apply.
func (j *Journal) Release(ctx context.Context) {
	if j == nil {
		return
	}
	if !j.keep && !errors.Is(ctx.Err(), context.Canceled) {
		os.Remove(j.path)
	}
	j.Close()
}

// Close unlocks the entry and keeps it.
func (j *Journal) Close() {
	if j != nil {
		j.f.Close()
	}
}

// CleanUp terminates a leftover instance that cannot be adopted (stopped,
// shutting down, or in another region than the create's now) and deletes
// the key pair and group the entry names, which nothing else would. c is
// the client of the entry's region.
func (j *Journal) CleanUp(ctx context.Context, c *Client, in *Instance) error {
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

// LaunchOrAdopt launches spec, or takes adopted over as if Launch had just
// returned it, OnLaunched included. An adopted instance whose image is
// unknown gets it described, since its image names the login user; when
// that fails the instance is still taken over (the login then says which
// user to set) and imageErr says why.
func LaunchOrAdopt(ctx context.Context, c *Client, spec Spec, adopted *Instance) (in *Instance, imageErr, err error) {
	if adopted == nil {
		in, err = c.Launch(ctx, spec)
		return in, nil, err
	}
	spec.OnLaunched(adopted.ID)
	if adopted.Image.ID == "" {
		im, err := c.DescribeImage(ctx, adopted.ImageID)
		if err != nil {
			return adopted, err, nil
		}
		adopted.Image = im
	}
	return adopted, nil, nil
}

// ForgetLaunch removes the unlocked entries of the journal in JournalDir
// that name instance id: the state holds it, so the create that made it
// did return its state (a stop cancels a create's context as a kill does,
// and its entry was kept), and no later create may adopt it.
func ForgetLaunch(id string) {
	dir := JournalDir()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range paths {
		j, err := lockLaunch(p, false)
		if err != nil || j == nil {
			continue
		}
		if j.entry.InstanceID == id {
			os.Remove(p)
		}
		j.Close()
	}
}
