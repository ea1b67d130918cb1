package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// hostOnlyProvider is the provider with only pgbench_host registered, so
// these tests depend on no other resource's schema.
const (
	numaBalancingFile = "/proc/sys/kernel/numa_balancing"
	thpEnabledFile    = "/sys/kernel/mm/transparent_hugepage/enabled"
)

func TestAccHostValidation(t *testing.T) {
	cases := []struct {
		name, config string
		want         string
	}{
		{"neither", `resource "pgbench_host" "x" {}`, `Exactly one of these attributes must be configured: \[ssh,local,ec2\]`},
		{"both", `resource "pgbench_host" "x" {
  local = true
  ssh {
    host        = "10.0.0.1"
    private_key = "k"
    host_key    = "SHA256:x"
  }
}`, `(?s)Invalid Attribute Combination.*ssh.*local`},
		{"local false", `resource "pgbench_host" "x" { local = false }`, `Invalid Local Host`},
		{"bad thp", `resource "pgbench_host" "x" {
  local = true
  tuning { transparent_hugepages = "sometimes" }
}`, `(?s)transparent_hugepages.*value must be one of`},
		{"bad numa_balancing", `resource "pgbench_host" "x" {
  local = true
  tuning { numa_balancing = "false" }
}`, `(?s)numa_balancing.*value must be one of`},
		{"bad governor", `resource "pgbench_host" "x" {
  local = true
  tuning { cpu_governor = "per formance" }
}`, `must be a governor name`},
		{"empty tuning", `resource "pgbench_host" "x" {
  local = true
  tuning {}
}`, `Empty Tuning Block`},
		{"relative install_dir", `resource "pgbench_host" "x" {
  local       = true
  install_dir = "lib/pgbench"
}`, `must be an absolute path`},
		{"bad package", `resource "pgbench_host" "x" {
  local = true
  bootstrap { packages = ["--force-yes"] }
}`, `Invalid Package Name`},
		{"ssh without host key", `resource "pgbench_host" "x" {
  ssh {
    host        = "10.0.0.1"
    private_key = "k"
  }
}`, `(?s)host_key.*must be specified`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      c.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
}

func readTrimmed(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		testhost.Skip(t, "needs %s: %v", p, err)
	}
	return strings.TrimSpace(string(b))
}

// hostFactChecks compares the resource's facts with what this machine
// reports: a test host shares the kernel with the test.
func hostFactChecks(t *testing.T, name string) []statecheck.StateCheck {
	t.Helper()
	in, err := sysinfo.Read("/")
	if err != nil {
		t.Fatalf("read facts of this machine: %v", err)
	}
	sizes := []knownvalue.Check{}
	for _, p := range in.HugePages {
		sizes = append(sizes, knownvalue.Int64Exact(p.SizeBytes))
	}
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(name, tfjsonpath.New("cpus"), knownvalue.Int64Exact(int64(in.CPUs))),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("numa_nodes"), knownvalue.Int64Exact(int64(len(in.NUMANodes)))),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("memory_bytes"), knownvalue.Int64Exact(in.MemoryTotalBytes)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("kernel"), knownvalue.StringExact(in.Kernel)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("cpu_model"), knownvalue.StringExact(in.CPUModel)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("hugepage_sizes"), knownvalue.ListExact(sizes)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_version"), knownvalue.NotNull()),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_sha256"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
	}
}

// runnerGone is a CheckDestroy that the runner and the tuning state file
// were removed and, when knobs is set, that each file has its value again.
func runnerGone(dir string, knobs map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, f := range []string{"pgbench-runner", "tune-state.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				return fmt.Errorf("%s after destroy: stat err = %v, want not exist", filepath.Join(dir, f), err)
			}
		}
		for p, want := range knobs {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if got := strings.TrimSpace(string(b)); got != want {
				return fmt.Errorf("%s after destroy = %q, want %q", p, got, want)
			}
		}
		return nil
	}
}

func TestAccHostLocal(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	nb := readTrimmed(t, numaBalancingFile)
	thp := readTrimmed(t, thpEnabledFile)
	// Ask for values different from the current ones, so applying and
	// reverting both really write.
	wantNB, wantNBFile := "on", "1"
	if nb != "0" {
		wantNB, wantNBFile = "off", "0"
	}
	wantTHP := "never"
	if sysinfo.BracketedMode(thp) == "never" {
		wantTHP = "madvise"
	}
	t.Cleanup(func() {
		// A failing test must not leave the machine tuned.
		os.WriteFile(numaBalancingFile, []byte(nb), 0o644)
		os.WriteFile(thpEnabledFile, []byte(sysinfo.BracketedMode(thp)), 0o644)
	})
	dir := filepath.Join(t.TempDir(), "lib", "pgbench")
	cfg := fmt.Sprintf(`
resource "pgbench_host" "local" {
  local       = true
  install_dir = %q
  bootstrap {
    packages = ["coreutils"]
  }
  tuning {
    numa_balancing        = %q
    transparent_hugepages = %q
    cpu_governor          = "performance"
  }
}
`, dir, wantNB, wantTHP)
	name := "pgbench_host.local"
	checks := append(hostFactChecks(t, name),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("id"), knownvalue.StringExact("local")),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("bootstrap_installed"), knownvalue.ListExact([]knownvalue.Check{})),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("numa_balancing"), knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"previous": knownvalue.StringExact(nb), "value": knownvalue.StringExact(wantNBFile), "status": knownvalue.StringExact("applied"),
		})),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("transparent_hugepages"), knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"previous": knownvalue.StringExact(sysinfo.BracketedMode(thp)), "value": knownvalue.StringExact(wantTHP), "status": knownvalue.StringExact("applied"),
		})),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("mode"), knownvalue.StringExact("local")),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("runner_path"), knownvalue.StringExact(filepath.Join(dir, "pgbench-runner"))),
	)
	governorFiles, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
	if len(governorFiles) == 0 {
		// No cpufreq here: recorded, not an error.
		checks = append(checks, statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("cpu_governor").AtMapKey("status"), knownvalue.StringExact("unsupported")))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, map[string]string{numaBalancingFile: nb, thpEnabledFile: thp}),
		Steps: []resource.TestStep{
			{
				Config:            cfg,
				ConfigStateChecks: checks,
				Check: func(*terraform.State) error {
					if got := readTrimmed(t, numaBalancingFile); got != wantNBFile {
						return fmt.Errorf("%s = %q, want %q", numaBalancingFile, got, wantNBFile)
					}
					if got := sysinfo.BracketedMode(readTrimmed(t, thpEnabledFile)); got != wantTHP {
						return fmt.Errorf("%s = %q, want %q", thpEnabledFile, got, wantTHP)
					}
					return nil
				},
			},
			{
				Config:            cfg,
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: checks[:1],
			},
			{
				// A runner that vanished from the host makes refresh drop the
				// resource, so the plan re-creates it; the tuning state file
				// left in install_dir keeps the original previous values.
				PreConfig: func() {
					if err := os.Remove(filepath.Join(dir, "pgbench-runner")); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("numa_balancing").AtMapKey("previous"), knownvalue.StringExact(nb)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("transparent_hugepages").AtMapKey("previous"), knownvalue.StringExact(sysinfo.BracketedMode(thp))),
				},
			},
			{
				Config:                  cfg,
				ResourceName:            name,
				ImportState:             true,
				ImportStateId:           "local," + dir,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"tuning", "bootstrap", "runner_sha256"},
			},
		},
	})
	// The install dir was created by the resource and is empty again.
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("install dir %s after destroy: stat err = %v, want not exist", dir, err)
	}
}

func sshHostConfig(h *testhost.Host, dir, bastion string) string {
	return fmt.Sprintf(`
resource "pgbench_host" "remote" {
  install_dir = %q
  ssh {
    host        = %q
    port        = %d
    private_key = %q
    host_key    = %q
%s
  }
}
`, dir, h.Addr, h.Port, h.ClientKeyPEM, h.HostKeyLine, bastion)
}

func testAccHostSSH(t *testing.T, h *testhost.Host, cfg, dir string) {
	name := "pgbench_host.remote"
	id := fmt.Sprintf("root@%s:%d", h.Addr, h.Port)
	checks := append(hostFactChecks(t, name),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("id"), knownvalue.StringExact(id)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied"), knownvalue.Null()),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("mode"), knownvalue.StringExact("ssh")),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("host"), knownvalue.StringExact(h.Addr)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("host_id"), knownvalue.StringExact(id)),
	)
	tc := resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, nil),
		Steps: []resource.TestStep{
			{
				Config:            cfg,
				ConfigStateChecks: checks,
				Check: func(*terraform.State) error {
					if fi, err := os.Stat(filepath.Join(dir, "pgbench-runner")); err != nil || fi.Mode()&0o111 == 0 {
						return fmt.Errorf("runner in %s: %v, mode %v; want an executable file", dir, err, fi)
					}
					return nil
				},
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config:            cfg,
				ResourceName:      name,
				ImportState:       true,
				ImportStateId:     id + "," + dir,
				ImportStateVerify: true,
				// The key and pinned host key come from configuration, so an
				// imported SSH host learns its facts on the next apply.
				ImportStateVerifyIgnore: []string{"ssh.private_key", "ssh.host_key", "ssh.bastion", "connection_info", "runner_",
					"cpus", "numa_nodes", "memory_bytes", "cpu_model", "kernel", "hugepage_sizes"},
			},
		},
	}
	resource.Test(t, tc)
}

func TestAccHostSSH(t *testing.T) {
	h := testhost.New(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	testAccHostSSH(t, h, sshHostConfig(h, dir, ""), dir)
}

func TestAccHostSSHBastion(t *testing.T) {
	bastion := testhost.New(t)
	h := testhost.New(t, testhost.Behind(bastion))
	dir := filepath.Join(t.TempDir(), "pgbench")
	b := fmt.Sprintf(`    bastion {
      host        = %q
      port        = %d
      private_key = %q
      host_key    = %q
    }`, bastion.Addr, bastion.Port, bastion.ClientKeyPEM, bastion.HostKeyLine)
	testAccHostSSH(t, h, sshHostConfig(h, dir, b), dir)
}

// A strict tuning the host cannot satisfy fails the create and leaves the
// machine as it was: no knob changed, no runner left behind.
func TestAccHostTuningFailureLeavesHostUnchanged(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	if m, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"); len(m) > 0 {
		t.Skip("this machine has cpufreq, so a strict cpu_governor does not fail here")
	}
	nb := readTrimmed(t, numaBalancingFile)
	thp := readTrimmed(t, thpEnabledFile)
	wantNB := "on"
	if nb != "0" {
		wantNB = "off"
	}
	t.Cleanup(func() {
		os.WriteFile(numaBalancingFile, []byte(nb), 0o644)
		os.WriteFile(thpEnabledFile, []byte(sysinfo.BracketedMode(thp)), 0o644)
	})
	dir := filepath.Join(t.TempDir(), "pgbench")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "pgbench_host" "local" {
  local       = true
  install_dir = %q
  tuning {
    numa_balancing = %q
    cpu_governor   = "performance"
    strict         = true
  }
}
`, dir, wantNB),
			ExpectError: regexp.MustCompile(`(?s)Tuning Failed.*not supported.*reverted`),
		}},
	})
	if err := runnerGone(dir, map[string]string{numaBalancingFile: nb, thpEnabledFile: thp})(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("install dir %s after failed create: stat err = %v, want not exist", dir, err)
	}
}

// Adopting a host that already has a runner: the import cannot know the
// keys, so configuration fills them in with an in-place update (not a
// replacement) that also reads the facts.
func TestAccHostSSHAdoptImported(t *testing.T) {
	h := testhost.New(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	ctx := context.Background()
	ex, err := remote.DialSSH(ctx, remote.SSHConfig{Host: h.Addr, Port: h.Port, User: h.User, PrivateKey: h.ClientKeyPEM, HostKey: h.HostKeyLine})
	if err != nil {
		t.Fatalf("dial test host: %v", err)
	}
	if _, err := runnerbin.Install(ctx, ex, runnerbin.Binary, dir); err != nil {
		ex.Close()
		t.Fatalf("install runner: %v", err)
	}
	ex.Close()
	cfg := sshHostConfig(h, dir, "")
	name := "pgbench_host.remote"
	id := fmt.Sprintf("root@%s:%d", h.Addr, h.Port)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, nil),
		Steps: []resource.TestStep{
			{
				Config:             cfg,
				ResourceName:       name,
				ImportState:        true,
				ImportStateId:      id + "," + dir,
				ImportStatePersist: true,
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: append(hostFactChecks(t, name),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("id"), knownvalue.StringExact(id)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("host_key"), knownvalue.StringExact(h.HostKeyLine)),
				),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// A campaign whose apply never finished is in no state, so only the host's
// destroy can remove its data directories; its reports stay.
func TestAccHostDestroyRemovesAbandonedCampaign(t *testing.T) {
	testhost.RequireRoot(t)
	const bin = "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(filepath.Join(bin, "pgbench")); err != nil {
		testhost.Skip(t, "PostgreSQL 15 is not installed in %s: %v", bin, err)
	}
	// A short path: the server's socket lives in its data directory and
	// a Unix socket path may not exceed 107 bytes.
	base, err := os.MkdirTemp("", "pgh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "pgbench")
	out := filepath.Join(dir, "campaigns", "x")
	cfg := fmt.Sprintf(`
resource "pgbench_host" "local" {
  local       = true
  install_dir = %q
}
`, dir)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(filepath.Join(out, "data")); !os.IsNotExist(err) {
				return fmt.Errorf("campaign data after host destroy: stat err = %v, want not exist", err)
			}
			if _, err := os.Stat(filepath.Join(out, "journal.jsonl")); err != nil {
				return fmt.Errorf("campaign journal after host destroy: %v, want it kept", err)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(*terraform.State) error {
				cmd := exec.Command(filepath.Join(dir, "pgbench-runner"), "ab", "--out", out,
					"--variant", "name=a,bin="+bin+",huge_pages=off", "--variant", "name=b,bin="+bin+",huge_pages=off",
					"--scale", "1", "--clients", "1", "--duration", "1s", "--iterations", "1")
				if b, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("run a campaign on the host: %v\n%s", err, b)
				}
				if _, err := os.Stat(filepath.Join(out, "data", "a")); err != nil {
					return fmt.Errorf("campaign data before destroy: %v, want it present", err)
				}
				return nil
			},
		}},
	})
}

// hostDeleteRequest is the Delete request of a local host installed in dir,
// with the given delete timeout ("" for none).
func hostDeleteRequest(t *testing.T, dir, deleteTimeout string) fwresource.DeleteRequest {
	t.Helper()
	ctx := context.Background()
	var sr fwresource.SchemaResponse
	(&hostResource{}).Schema(ctx, fwresource.SchemaRequest{}, &sr)
	del := types.StringNull()
	if deleteTimeout != "" {
		del = types.StringValue(deleteTimeout)
	}
	m := hostModel{
		ID: types.StringValue("local"), Local: types.BoolValue(true), InstallDir: types.StringValue(dir),
		Connection:         types.ObjectNull(connectionAttrTypes),
		HugepageSizes:      types.ListNull(types.Int64Type),
		TuningApplied:      types.MapNull(types.ObjectType{AttrTypes: tuningAppliedAttrTypes}),
		BootstrapInstalled: types.ListNull(types.StringType),
		Timeouts: timeouts.Value{Object: types.ObjectValueMust(
			map[string]attr.Type{"create": types.StringType, "delete": types.StringType},
			map[string]attr.Value{"create": types.StringNull(), "delete": del})},
	}
	m.nullFacts()
	st := tfsdk.State{Schema: sr.Schema}
	if diags := st.Set(ctx, &m); diags.HasError() {
		t.Fatalf("build state: %v", diags)
	}
	return fwresource.DeleteRequest{State: st}
}

// An ssh or local host's destroy is bounded by timeouts.delete, and says so
// when it runs out.
func TestHostDeleteHonoursTimeout(t *testing.T) {
	dir := t.TempDir()
	// A runner whose uninstall hangs.
	if err := os.WriteFile(filepath.Join(dir, "pgbench-runner"), []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var resp fwresource.DeleteResponse
	(&hostResource{}).Delete(context.Background(), hostDeleteRequest(t, dir, "300ms"), &resp)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Delete took %s with a 300ms delete timeout", took)
	}
	if !resp.Diagnostics.HasError() {
		t.Fatalf("Delete of a hanging uninstall: no error, want one")
	}
	got := fmt.Sprint(resp.Diagnostics)
	if !strings.Contains(got, "Host Uninstall Failed") || !strings.Contains(got, "delete timeout (300ms) expired") {
		t.Errorf("diagnostics = %s, want Host Uninstall Failed naming the delete timeout (300ms)", got)
	}
}

// A runner that is already gone cannot undo anything: destroy says so in a
// warning instead of failing for ever.
func TestHostDeleteRunnerGoneWarns(t *testing.T) {
	dir := t.TempDir()
	var resp fwresource.DeleteResponse
	(&hostResource{}).Delete(context.Background(), hostDeleteRequest(t, dir, ""), &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("Delete without a runner: %v, want only a warning", resp.Diagnostics)
	}
	if w := resp.Diagnostics.Warnings(); len(w) != 1 || w[0].Summary() != "Runner Missing" ||
		!strings.Contains(w[0].Detail(), "tune-state.json") {
		t.Errorf("warnings = %v, want one Runner Missing that names the tuning state file", w)
	}
}

func TestHostContextUsesTimeouts(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		del  string
		want time.Duration
	}{{"90s", 90 * time.Second}, {"", defaultHostTimeout}} {
		req := hostDeleteRequest(t, t.TempDir(), tt.del)
		var m hostModel
		req.State.Get(ctx, &m)
		var diags diag.Diagnostics
		dctx, cancel, d := hostContext(ctx, &m, false, &diags)
		deadline, ok := dctx.Deadline()
		cancel()
		if diags.HasError() || d != tt.want || !ok || time.Until(deadline) > tt.want || time.Until(deadline) < tt.want-time.Minute {
			t.Errorf("delete timeout %q: bound %s, deadline in %s (%v); want %s", tt.del, d, time.Until(deadline), diags, tt.want)
		}
	}
}

func TestUninstallArgs(t *testing.T) {
	for _, tt := range []struct {
		created, keep bool
		want          []string
	}{
		{false, false, []string{"uninstall", "--dir", "/opt/pg"}},
		{true, false, []string{"uninstall", "--dir", "/opt/pg", "--remove-dir"}},
		{true, true, []string{"uninstall", "--dir", "/opt/pg", "--remove-dir", "--keep-campaigns"}},
	} {
		if got := uninstallArgs("/opt/pg", tt.created, tt.keep); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("uninstallArgs(created %v, keep %v) = %q, want %q", tt.created, tt.keep, got, tt.want)
		}
	}
}

// A configured delete timeout reaches the destroy of a local host: one too
// short to run anything fails it, naming the timeout; a longer one, set in
// place, lets it finish.
func TestAccHostLocalDeleteTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lib", "pgbench")
	cfg := func(del string) string {
		return fmt.Sprintf(`
resource "pgbench_host" "local" {
  local       = true
  install_dir = %q
  timeouts {
    delete = %q
  }
}
`, dir, del)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             runnerGone(dir, nil),
		Steps: []resource.TestStep{
			{Config: cfg("1ns")},
			{Config: cfg("1ns"), Destroy: true, ExpectError: regexp.MustCompile(`(?s)Host Uninstall Failed.*delete\s+timeout\s+\(1ns\)\s+expired`)},
			{
				Config: cfg("5m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_host.local", plancheck.ResourceActionUpdate),
				}},
			},
		},
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("install dir %s after destroy: stat err = %v, want not exist", dir, err)
	}
}

// On a laptop running macOS or Windows, local = true is refused at plan
// time with the reason, since the host side needs Linux.
func TestLocalHostSupported(t *testing.T) {
	if err := localHostSupported("linux"); err != nil {
		t.Fatalf("localHostSupported(linux) = %v, want nil", err)
	}
	for _, goos := range []string{"darwin", "windows"} {
		err := localHostSupported(goos)
		if err == nil || !strings.Contains(err.Error(), goos) || !strings.Contains(err.Error(), "ssh or ec2") {
			t.Errorf("localHostSupported(%s) = %v, want an error naming %s and the way out", goos, err, goos)
		}
	}
}
