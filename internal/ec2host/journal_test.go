package ec2host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testValue is an attribute value as identity reads it.
type testValue string

func (v testValue) IsNull() bool    { return v == "" }
func (v testValue) IsUnknown() bool { return false }
func (v testValue) String() string {
	if v == "" {
		return "<null>"
	}
	return strconv.Quote(string(v))
}

type testImage struct {
	Name testValue `tfsdk:"name"`
}

type testBlock struct {
	InstanceType testValue  `tfsdk:"instance_type"`
	PollInterval testValue  `tfsdk:"poll_interval"`
	Image        *testImage `tfsdk:"image"`
	Root         *testImage `tfsdk:"root_volume"`
	Untagged     testValue
}

type testCreate struct {
	InstallDir testValue  `tfsdk:"install_dir"`
	EC2        *testBlock `tfsdk:"ec2"`
}

// TestLaunchKeyHashesTheIdentity: the key is the hash of one name=value
// line per argument, nested blocks prefixed by their name, ignored and
// untagged fields left out, so that keys of existing journals still match.
func TestLaunchKeyHashesTheIdentity(t *testing.T) {
	v := testCreate{InstallDir: "/opt/pgbench", EC2: &testBlock{InstanceType: "m6i.metal", PollInterval: "15s",
		Image: &testImage{Name: "debian-12-*"}, Untagged: "x"}}
	text := "workspace=staging\n" +
		"install_dir=\"/opt/pgbench\"\n" +
		"ec2.instance_type=\"m6i.metal\"\n" +
		"ec2.image.name=\"debian-12-*\"\n" +
		"ec2.root_volume=null\n"
	sum := sha256.Sum256([]byte(text))
	want := hex.EncodeToString(sum[:16])
	if got := LaunchKey("staging", v, map[string]bool{"poll_interval": true}); got != want {
		t.Errorf("LaunchKey = %s, want the hash %s of\n%s", got, want, text)
	}
	if got := LaunchKey("staging", &v, map[string]bool{"poll_interval": true}); got != want {
		t.Errorf("LaunchKey of a pointer = %s, want %s", got, want)
	}
	if got := LaunchKey("default", v, map[string]bool{"poll_interval": true}); got == want {
		t.Errorf("LaunchKey in another workspace = %s, the same", got)
	}
	if got := LaunchKey("staging", v, nil); got == want {
		t.Errorf("LaunchKey with poll_interval not ignored = %s, the same", got)
	}
}

// TestJournalDirAndWorkspace: the journal lives in the Terraform data
// directory, and the workspace is TF_WORKSPACE, else the selected one,
// else default.
func TestJournalDirAndWorkspace(t *testing.T) {
	data := t.TempDir()
	t.Setenv("TF_DATA_DIR", data)
	t.Setenv("TF_WORKSPACE", "")
	if got, want := JournalDir(), filepath.Join(data, "pgbench", "launches"); got != want {
		t.Errorf("JournalDir = %s, want %s", got, want)
	}
	if got := Workspace(); got != "default" {
		t.Errorf("Workspace with none selected = %s, want default", got)
	}
	if err := os.WriteFile(filepath.Join(data, "environment"), []byte("staging\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Workspace(); got != "staging" {
		t.Errorf("Workspace selected = %s, want staging", got)
	}
	t.Setenv("TF_WORKSPACE", "prod")
	if got := Workspace(); got != "prod" {
		t.Errorf("Workspace with TF_WORKSPACE=prod = %s, want prod", got)
	}
	t.Setenv("TF_DATA_DIR", "")
	if got, want := JournalDir(), filepath.Join(".terraform", "pgbench", "launches"); got != want {
		t.Errorf("JournalDir without TF_DATA_DIR = %s, want %s", got, want)
	}
}

// TestJournalNotes: each note is written through at once, a note keeps
// what it is not given, and the record is the JSON of LaunchEntry.
func TestJournalNotes(t *testing.T) {
	dir := t.TempDir()
	j, err := ClaimLaunch(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Start("pgbench-tok", "us-east-2"); err != nil {
		t.Fatal(err)
	}
	if err := j.NoteKey("pgbench-a", "PRIVATE KEY"); err != nil {
		t.Fatal(err)
	}
	if err := j.NoteGroup("pgbench-a", "vpc-1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Note(LaunchEntry{SecurityGroupID: "sg-1"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Note(LaunchEntry{InstanceID: "i-1", ClientToken: "ignored"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"client_token": "pgbench-tok", "region": "us-east-2", "key_name": "pgbench-a",
		"private_key": "PRIVATE KEY", "security_group_name": "pgbench-a", "security_group_vpc": "vpc-1",
		"security_group_id": "sg-1", "instance_id": "i-1"} {
		if got[k] != want {
			t.Errorf("entry %s = %v, want %s (entry %s)", k, got[k], want, b)
		}
	}
	if _, ok := got["started"]; !ok || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("entry = %s, want a started time and a final newline", b)
	}
}

// TestJournalReleaseKeeps: an entry is kept when its create was cancelled
// or asked to Keep it, and removed otherwise; a nil Journal does nothing.
func TestJournalReleaseKeeps(t *testing.T) {
	var none *Journal
	none.Release(context.Background())
	none.Close()
	if err := none.Start("t", "r"); err != nil {
		t.Errorf("Start of no journal = %v", err)
	}
	dir := t.TempDir()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, tc := range map[string]struct {
		ctx  context.Context
		keep bool
		kept bool
	}{
		"finished":  {context.Background(), false, false},
		"cancelled": {cancelled, false, true},
		"kept":      {context.Background(), true, true},
	} {
		j, err := ClaimLaunch(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		if tc.keep {
			j.Keep()
		}
		j.Release(tc.ctx)
		if _, err := os.Stat(j.Path()); (err == nil) != tc.kept {
			t.Errorf("%s: entry after Release: %v, want kept = %v", name, err, tc.kept)
		}
	}
}

// TestForgetLaunch removes the unlocked entries that name the instance and
// leaves the others.
func TestForgetLaunch(t *testing.T) {
	data := t.TempDir()
	t.Setenv("TF_DATA_DIR", data)
	dir := JournalDir()
	for _, c := range []struct{ key, id string }{{"a", "i-1"}, {"b", "i-2"}, {"c", "i-1"}} {
		j, err := ClaimLaunch(dir, c.key)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Start("pgbench-"+c.key, "us-east-2"); err != nil {
			t.Fatal(err)
		}
		if err := j.Note(LaunchEntry{InstanceID: c.id}); err != nil {
			t.Fatal(err)
		}
		if c.key == "c" {
			defer j.Close() // still held by its create
			continue
		}
		j.Close()
	}
	ForgetLaunch("i-1")
	for key, kept := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, err := os.Stat(filepath.Join(dir, key+".json")); (err == nil) != kept {
			t.Errorf("entry %s after ForgetLaunch(i-1): %v, want kept = %v", key, err, kept)
		}
	}
	if j, err := LockLaunch(filepath.Join(dir, "c.json")); err != nil || j != nil {
		t.Errorf("LockLaunch of a held entry = %v, %v; want nil", j, err)
	}
	j, err := LockLaunch(filepath.Join(dir, "b.json"))
	if err != nil || j == nil || j.Entry().InstanceID != "i-2" || !j.Leftover() {
		t.Fatalf("LockLaunch of b = %+v, %v; want its record", j, err)
	}
	j.Close()
}

// TestLaunchJournalLeftoverFirst: a leftover in a later slot is claimed
// before a free first slot, so an apply that re-creates only the second
// of two hosts adopts the second's instance.
func TestLaunchJournalLeftoverFirst(t *testing.T) {
	dir := t.TempDir()
	a, _ := ClaimLaunch(dir, "k")
	b, _ := ClaimLaunch(dir, "k")
	if err := b.Start("pgbench-tok-b", "us-east-2"); err != nil {
		t.Fatal(err)
	}
	a.Release(context.Background())
	b.Close()
	got, err := ClaimLaunch(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if !got.leftover || got.entry.ClientToken != "pgbench-tok-b" || filepath.Base(got.path) != "k-1.json" {
		t.Errorf("claim = %s %+v (leftover %v), want the leftover k-1.json", got.path, got.entry, got.leftover)
	}
}

// TestLaunchJournalTornAndUnreadable: a record followed by the tail of an
// older, longer one (a kill between write and truncate) still reads; an
// entry that cannot be read is skipped and reported, never reused.
func TestLaunchJournalTornAndUnreadable(t *testing.T) {
	dir := t.TempDir()
	torn := `{"client_token": "pgbench-tok", "region": "us-east-2", "instance_id": "i-0t"}` + "\n" + `ey": "stale"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "k.json"), []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := ClaimLaunch(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !j.leftover || j.entry.InstanceID != "i-0t" {
		t.Errorf("torn entry read as %+v (leftover %v), want instance i-0t", j.entry, j.leftover)
	}
	j.Release(context.Background())

	if err := os.WriteFile(filepath.Join(dir, "k.json"), []byte("{\"client_tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = ClaimLaunch(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.leftover || filepath.Base(j.path) != "k-1.json" || len(j.unreadable) != 1 ||
		!strings.Contains(j.unreadable[0].Error(), filepath.Join(dir, "k.json")) {
		t.Errorf("claim beside an unreadable entry = %s (leftover %v, unreadable %v), want a fresh k-1.json naming k.json",
			j.path, j.leftover, j.unreadable)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "k.json")); string(b) != "{\"client_tok" {
		t.Errorf("unreadable entry now holds %q, want it untouched", b)
	}
}
