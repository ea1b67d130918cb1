package provider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// testKey is an extra client key for a test host: its PEM, its
// authorized_keys line and the SHA256 fingerprint sshd logs on login.
type testKey struct {
	PEM, Line, Fingerprint string
}

func newTestKey(t *testing.T) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{PEM: string(pem.EncodeToMemory(block)), Line: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))),
		Fingerprint: ssh.FingerprintSHA256(sp)}
}

// startSSHAgent runs a real ssh-agent on a socket of its own, adds keys
// to it with ssh-add, and points SSH_AUTH_SOCK at it for the test.
func startSSHAgent(t *testing.T, keys ...string) string {
	t.Helper()
	agentPath := testhost.RequireCommand(t, "ssh-agent", "/usr/bin")
	addPath := testhost.RequireCommand(t, "ssh-add", "/usr/bin")
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(agentPath, "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ssh-agent: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent made no socket at %s", sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, k := range keys {
		f := filepath.Join(dir, fmt.Sprintf("key%d", i))
		if err := os.WriteFile(f, []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
		add := exec.Command(addPath, f)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %s: %v: %s", f, err, out)
		}
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	return sock
}

// acceptedWith counts sshd's "Accepted publickey" lines that name the key.
func acceptedWith(h *testhost.Host, fingerprint string) int {
	n := 0
	for _, l := range strings.Split(h.SSHDLog(), "\n") {
		if strings.Contains(l, "Accepted publickey") && strings.Contains(l, fingerprint) {
			n++
		}
	}
	return n
}

// campaignFiles lists the files of a campaign directory with their sizes.
func campaignFiles(dir string) (map[string]int64, error) {
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fi.Size()
		return nil
	})
	return out, err
}

// A host, a system build and a small campaign applied with one key; then
// the configuration moves to a second key the host also authorizes, and
// then to an ssh-agent holding it. Neither change replaces anything or
// measures again (the campaign's journal and run files do not change),
// the new key is the one that logs in, the plan shows which field of
// host_connection changed (only key fields are sensitive), and the plan
// after the agent switch is empty.
func TestAccConnectionRotateKeepsDependents(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	second := newTestKey(t)
	h := testhost.New(t, testhost.WithAuthorizedKey(second.Line))
	dir := filepath.Join(reachableTempDir(t), "pgbench")
	// The collected report goes to a directory of the test's, not to
	// pgbench-results in the package directory, where other tests collect.
	localDir := filepath.Join(t.TempDir(), "results")
	config := func(auth string) string {
		return fmt.Sprintf(`
resource "pgbench_host" "h" {
  install_dir = %q
  ssh {
    host     = %q
    port     = %d
    host_key = %q
    %s
  }
}

resource "pgbench_postgres_build" "pg" {
  host_connection = pgbench_host.h.connection_info
  source {
    system = %q
  }
}

resource "pgbench_ab_benchmark" "ab" {
  host_connection = pgbench_host.h.connection_info
  local_dir       = %q
  settings        = { shared_buffers = "16MB" }
  variant {
    name       = "a"
    bin_dir    = pgbench_postgres_build.pg.bin_dir
    huge_pages = "off"
  }
  variant {
    name       = "b"
    bin_dir    = pgbench_postgres_build.pg.bin_dir
    huge_pages = "off"
  }
  workload {
    scale      = 1
    clients    = [1]
    duration   = "1s"
    iterations = 1
  }
}
`, dir, h.Addr, h.Port, h.HostKeyLine, auth, systemPGBin, localDir)
	}
	first := config(fmt.Sprintf("private_key = %q", string(h.ClientKeyPEM)))
	rotated := config(fmt.Sprintf("private_key = %q", second.PEM))
	agent := config("agent = true")
	names := []string{"pgbench_host.h", "pgbench_postgres_build.pg", "pgbench_ab_benchmark.ab"}
	inPlace := func() []plancheck.PlanCheck {
		var out []plancheck.PlanCheck
		for _, n := range names {
			out = append(out, plancheck.ExpectResourceAction(n, plancheck.ResourceActionUpdate))
		}
		return append(out, onlyKeysSensitive{"pgbench_ab_benchmark.ab"}, onlyKeysSensitive{"pgbench_postgres_build.pg"})
	}
	var reportDir string
	var files map[string]int64
	unchanged := func(*terraform.State) error {
		got, err := campaignFiles(reportDir)
		if err != nil {
			return err
		}
		if len(got) != len(files) {
			return fmt.Errorf("campaign %s holds %d files after the update, want the %d it had", reportDir, len(got), len(files))
		}
		for p, n := range files {
			if got[p] != n {
				return fmt.Errorf("%s is %d bytes after the update, want %d: the campaign measured again", p, got[p], n)
			}
		}
		return nil
	}
	var before int
	loggedInWithSecond := func(*terraform.State) error {
		if n := acceptedWith(h, second.Fingerprint); n <= before {
			return fmt.Errorf("sshd accepted the second key %d times, want more than %d: the update did not log in with it\n%s", n, before, h.SSHDLog())
		}
		before = acceptedWith(h, second.Fingerprint)
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, nil),
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: func(s *terraform.State) error {
					reportDir = s.RootModule().Resources["pgbench_ab_benchmark.ab"].Primary.Attributes["report_dir"]
					if _, err := os.Stat(filepath.Join(reportDir, campaign.JournalFile)); err != nil {
						return fmt.Errorf("campaign journal: %v", err)
					}
					var err error
					files, err = campaignFiles(reportDir)
					before = acceptedWith(h, second.Fingerprint)
					return err
				},
			},
			{
				Config:           rotated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: inPlace()},
				Check:            resource.ComposeTestCheckFunc(unchanged, loggedInWithSecond),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.ab", tfjsonpath.New("host_connection").AtMapKey("private_key"),
						knownvalue.StringExact(second.PEM)),
				},
			},
			{
				PreConfig:        func() { startSSHAgent(t, second.PEM) },
				Config:           agent,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: inPlace()},
				Check:            resource.ComposeTestCheckFunc(unchanged, loggedInWithSecond),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_host.h", tfjsonpath.New("connection_info").AtMapKey("private_key"), knownvalue.Null()),
					statecheck.ExpectKnownValue("pgbench_host.h", tfjsonpath.New("connection_info").AtMapKey("agent"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.ab", tfjsonpath.New("host_connection").AtMapKey("private_key"), knownvalue.Null()),
				},
			},
			{
				Config:           agent,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// onlyKeysSensitive checks, in the plan JSON, that the resource's
// host_connection is not sensitive as a whole and that its only sensitive
// fields are the private keys.
type onlyKeysSensitive struct{ address string }

func (c onlyKeysSensitive) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.address {
			continue
		}
		marks, ok := rc.Change.AfterSensitive.(map[string]any)
		if !ok {
			resp.Error = fmt.Errorf("%s: after_sensitive = %#v, want an object", c.address, rc.Change.AfterSensitive)
			return
		}
		conn, ok := marks["host_connection"].(map[string]any)
		if !ok {
			resp.Error = fmt.Errorf("%s: host_connection is marked %#v, want per-field marks", c.address, marks["host_connection"])
			return
		}
		for field, m := range conn {
			if m == true && field != "private_key" && field != "bastion_private_key" {
				resp.Error = fmt.Errorf("%s: host_connection.%s is sensitive, want only the private keys", c.address, field)
				return
			}
		}
		if conn["private_key"] != true {
			resp.Error = fmt.Errorf("%s: host_connection.private_key is marked %#v, want sensitive", c.address, conn["private_key"])
		}
		return
	}
	resp.Error = fmt.Errorf("%s is not in the plan", c.address)
}

// A new key the host refuses fails the update with the host's answer; the
// state keeps the old, working key, so the next plan shows the change
// again and the old configuration plans nothing.
func TestAccHostSSHRefusedKeyKeepsState(t *testing.T) {
	h := testhost.New(t)
	refused := newTestKey(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	good := sshHostConfig(h, dir, "")
	bad := strings.Replace(good, fmt.Sprintf("%q", string(h.ClientKeyPEM)), fmt.Sprintf("%q", refused.PEM), 1)
	if bad == good {
		t.Fatal("the refused key did not make it into the configuration")
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, nil),
		Steps: []resource.TestStep{
			{Config: good},
			{
				Config: bad,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_host.remote", plancheck.ResourceActionUpdate)}},
				ExpectError: regexp.MustCompile(`(?s)Cannot Log In With New Settings.*unable to authenticate.*previous settings`),
			},
			{
				Config:             bad,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:           good,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_host.remote", tfjsonpath.New("ssh").AtMapKey("private_key"), knownvalue.StringExact(string(h.ClientKeyPEM))),
				},
			},
		},
	})
}

// ssh { agent = true } with no key in the agent, or no agent at all, is
// refused with an error that names SSH_AUTH_SOCK, before anything is
// installed.
func TestAccHostSSHAgentMissingOrEmpty(t *testing.T) {
	h := testhost.New(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	cfg := fmt.Sprintf(`
resource "pgbench_host" "remote" {
  install_dir = %q
  ssh {
    host     = %q
    port     = %d
    host_key = %q
    agent    = true
  }
}
`, dir, h.Addr, h.Port, h.HostKeyLine)
	t.Setenv("SSH_AUTH_SOCK", "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg, ExpectError: regexp.MustCompile(`(?s)SSH_AUTH_SOCK\s+is\s+not\s+set`)},
			{
				PreConfig:   func() { startSSHAgent(t) },
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)SSH_AUTH_SOCK=.*holds\s+no\s+keys.*ssh-add`),
			},
		},
	})
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("install dir %s after refused logins: %v, want none", dir, err)
	}
}

// Only another host replaces a dependent resource.
func TestConnectionIdentity(t *testing.T) {
	obj := func(mode, host, hostKey, hostID, user string, port int64, key string) types.Object {
		c := connectionModel{Mode: types.StringValue(mode), Host: types.StringValue(host), Port: types.Int64Value(port),
			User: types.StringValue(user), PrivateKey: types.StringValue(key), HostKey: types.StringValue(hostKey), Agent: types.BoolNull(),
			BastionHost: types.StringNull(), BastionPort: types.Int64Null(), BastionUser: types.StringNull(),
			BastionPrivateKey: types.StringNull(), BastionHostKey: types.StringNull(), BastionAgent: types.BoolNull(),
			RunnerPath: types.StringValue("/opt/pgbench/pgbench-runner"), HostID: types.StringValue(hostID)}
		o, err := c.objectValue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	base := obj("ssh", "10.0.0.1", "SHA256:a", "root@10.0.0.1:22", "root", 22, "k1")
	tests := []struct {
		name string
		next types.Object
		same bool
	}{
		{"new key, user and port", obj("ssh", "10.0.0.1", "SHA256:a", "bench@10.0.0.1:2222", "bench", 2222, "k2"), true},
		{"another address", obj("ssh", "10.0.0.2", "SHA256:a", "root@10.0.0.2:22", "root", 22, "k1"), false},
		{"another host key", obj("ssh", "10.0.0.1", "SHA256:b", "root@10.0.0.1:22", "root", 22, "k1"), false},
		{"local", obj("local", "", "", "local", "", 0, ""), false},
		{"an instance", obj("ssh", "10.0.0.1", "SHA256:a", "i-0123456789abcdef0", "admin", 22, "k1"), false},
		{"unknown", types.ObjectUnknown(connectionAttrTypes), false},
	}
	was, ok := connectionIdentity(base)
	if !ok {
		t.Fatal("identity of a known connection is not known")
	}
	for _, tt := range tests {
		now, ok := connectionIdentity(tt.next)
		if got := ok && now == was; got != tt.same {
			t.Errorf("%s: same host = %v (%q vs %q), want %v", tt.name, got, now, was, tt.same)
		}
	}
	// Two states of one instance are one host whatever its address.
	a, _ := connectionIdentity(obj("ssh", "10.0.0.1", "SHA256:a", "i-0123456789abcdef0", "admin", 22, "k1"))
	b, _ := connectionIdentity(obj("ssh", "10.0.0.9", "SHA256:a", "i-0123456789abcdef0", "admin", 22, "k2"))
	if a != b {
		t.Errorf("one instance: identities %q and %q differ", a, b)
	}
}
