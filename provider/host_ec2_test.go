package provider

import (
	"context"
	"fmt"
	"math"
	"os"
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

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestAccEC2HostLifecycle(t *testing.T) {
	testhost.LockKernel(t)
	sim := ec2TestRegion(t)
	// ec2 hosts share this kernel in the simulation, and destroy
	// terminates rather than reverts: put the knob back here.
	testhost.SaveSysctl(t, "kernel.numa_balancing")
	dir := filepath.Join(t.TempDir(), "pgbench")
	cfg := ec2HostConfig(sim, dir, `
    availability_zones = ["us-east-2a", "us-east-2b"]
    tags               = { project = "clock-sweep" }
    root_volume {
      size_gb    = 2000
      type       = "gp3"
      iops       = 16000
      throughput = 1000
    }
`, `
  tuning {
    numa_balancing = "off"
  }
`)
	name := "pgbench_host.metal"
	var launched []ec2sim.InstanceInfo
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				// The first RunInstances answer is lost after the
				// instance was made: the SDK's retry carries the same
				// client token and must not launch a second one.
				PreConfig: func() { sim.FailAfterCreate(1) },
				Config:    cfg,
				Check: resource.ComposeTestCheckFunc(
					ec2Only(sim, 1, &launched),
					func(s *terraform.State) error {
						in := launched[0]
						rs := s.RootModule().Resources[name].Primary.Attributes
						if got, want := rs["id"], in.ID; got != want {
							return fmt.Errorf("id = %q, want the instance id %q", got, want)
						}
						if got, want := rs["ec2.instance_id"], in.ID; got != want {
							return fmt.Errorf("ec2.instance_id = %q, want %q", got, want)
						}
						if in.State != ec2sim.Running {
							return fmt.Errorf("instance state = %s, want running", in.State)
						}
						if got, want := sim.Calls("RunInstances"), 3; got != want {
							return fmt.Errorf("RunInstances calls = %d, want %d (the preflight's DryRun, the lost answer and its retry)", got, want)
						}
						if got, want := in.ShutdownBehavior, "terminate"; got != want {
							return fmt.Errorf("shutdown behaviour = %q, want %q", got, want)
						}
						if got, want := in.DeadManAt.UTC().Format(time.RFC3339), rs["ec2.expires_at"]; got != want {
							return fmt.Errorf("dead-man switch at %s, want expires_at %s", got, want)
						}
						for k, want := range map[string]string{"managed-by": "pgbench", "owner": "ci", "project": "clock-sweep", "expires-at": rs["ec2.expires_at"]} {
							if got := in.Tags[k]; got != want || got == "" {
								return fmt.Errorf("tag %s = %q, want %q", k, got, want)
							}
						}
						if got, want := rs["connection_info.host"], in.Host.Addr; got != want {
							return fmt.Errorf("connection_info.host = %q, want the instance's address %q", got, want)
						}
						if got, want := rs["ec2.generated_key_name"], in.KeyName; got != want || got == "" {
							return fmt.Errorf("generated_key_name = %q, want the launch key %q", got, want)
						}
						p := sim.LastRunInstances()
						if got, want := p.Get("BlockDeviceMapping.1.Ebs.VolumeSize"), "2000"; got != want {
							return fmt.Errorf("root volume size = %q, want %q", got, want)
						}
						// Secure defaults: IMDSv2 only, hop limit 1, the root
						// volume encrypted with the account's default key.
						if got, want := in.Metadata, (ec2sim.MetadataOptions{HTTPTokens: "required", HopLimit: 1}); got != want {
							return fmt.Errorf("metadata options = %+v, want %+v", got, want)
						}
						if len(in.Volumes) == 0 || !in.Volumes[0].Encrypted || in.Volumes[0].KMSKeyID != "" {
							return fmt.Errorf("root volume = %+v, want encrypted with the default key", in.Volumes)
						}
						if fi, err := os.Stat(filepath.Join(dir, "pgbench-runner")); err != nil || fi.Mode()&0o111 == 0 {
							return fmt.Errorf("runner on the instance: %v, %v; want an executable", fi, err)
						}
						return nil
					},
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("availability_zone"), knownvalue.StringExact("us-east-2a")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("hourly_price_usd"), knownvalue.Float64Exact(14.45)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("image_id"), knownvalue.StringExact("ami-0a9b8c7d6e5f40312")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("host_key"), knownvalue.StringRegexp(regexp.MustCompile(`^SHA256:`))),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_version"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("cpus"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("numa_balancing").AtMapKey("value"), knownvalue.StringExact("0")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("mode"), knownvalue.StringExact("ssh")),
					// Debian's stock image: its login user, root through sudo.
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("ssh_user"), knownvalue.StringExact("admin")),
				},
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				// Terminated outside Terraform: refresh drops it (and what
				// was made for it), so the plan launches a new one.
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					c, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, PollInterval: 50 * time.Millisecond})
					if err != nil {
						t.Fatalf("ec2host.New: %v", err)
					}
					if err := c.Terminate(ctx, launched[0].ID); err != nil {
						t.Fatalf("terminate %s outside Terraform: %v", launched[0].ID, err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectResourceAction(name, plancheck.ResourceActionCreate)},
				},
			},
		},
	})
}

func TestAccEC2HostZoneFallback(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	cfg := ec2HostConfig(sim, dir, `    availability_zones = ["us-east-2a", "us-east-2b"]`, "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				// No zone has capacity: the error names the type and
				// both zones, and nothing is left behind.
				PreConfig: func() {
					sim.FailCapacity("us-east-2a", true)
					sim.FailCapacity("us-east-2b", true)
				},
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)No EC2 Capacity.*r8i\.metal-96xl.*us-east-2a:\s+InsufficientInstanceCapacity.*us-east-2b:\s+InsufficientInstanceCapacity`),
			},
			{
				PreConfig: func() {
					if n := len(sim.Instances()); n != 0 {
						t.Errorf("instances after the capacity failure = %d, want 0", n)
					}
					if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
						t.Errorf("after the capacity failure key pairs = %v, security groups = %v, want none", k, g)
					}
					sim.FailCapacity("us-east-2b", false)
				},
				Config: cfg,
				Check:  ec2Only(sim, 1, nil),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_host.metal", tfjsonpath.New("ec2").AtMapKey("availability_zone"), knownvalue.StringExact("us-east-2b")),
				},
			},
		},
	})
}

// TestAccEC2HostFailureAfterLaunch: an instance that boots but never
// accepts SSH stays in state (tainted); the next apply replaces it and the
// destroy terminates what is left, so nothing keeps running.
func TestAccEC2HostFailureAfterLaunch(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	cfg := ec2HostConfig(sim, dir, "", `
  timeouts {
    create = "6s"
  }
`)
	// The replacement installs the runner, which a loaded host may not
	// finish in 6 s.
	replace := ec2HostConfig(sim, dir, "", `
  timeouts {
    create = "2m"
  }
`)
	var first []ec2sim.InstanceInfo
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { sim.NoSSH(1) },
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)EC2 Instance Unreachable.*is\s+in\s+state\s+and\s+tainted`),
			},
			{
				// The failed instance still runs, and is recorded: this
				// apply replaces it (terminating it) with a working one.
				PreConfig: func() {
					first = sim.Instances()
					if len(first) != 1 || first[0].State != ec2sim.Running {
						t.Errorf("after the failed create instances = %+v, want one running", first)
					}
				},
				Config: replace,
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						ins := sim.Instances()
						if len(ins) != 2 {
							return fmt.Errorf("instances = %d, want 2 (the failed one and its replacement)", len(ins))
						}
						if ins[0].State != ec2sim.Terminated && ins[0].State != ec2sim.ShuttingDown {
							return fmt.Errorf("replaced instance %s is %s, want terminated", ins[0].ID, ins[0].State)
						}
						if got, want := s.RootModule().Resources["pgbench_host.metal"].Primary.ID, ins[1].ID; got != want {
							return fmt.Errorf("id = %s, want the replacement %s", got, want)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccEC2HostBootFailure: EC2 fails the launch on its side (pending ->
// terminated); the error says so and nothing keeps running.
func TestAccEC2HostBootFailure(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { sim.FailBoot(1) },
				Config:      ec2HostConfig(sim, dir, "", ""),
				ExpectError: regexp.MustCompile(`(?s)EC2 Instance Not Running.*(terminated|shutting-down).*Server\.InternalError`),
			},
		},
	})
}

func TestAccEC2Sweep(t *testing.T) {
	sim := ec2TestRegion(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	launch := func(now time.Time) string {
		c, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, PollInterval: 50 * time.Millisecond,
			Now: func() time.Time { return now }})
		if err != nil {
			t.Fatalf("ec2host.New: %v", err)
		}
		in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageName: ec2TestImage, ImageOwners: []string{ec2TestOwner}, Owner: "lost-state"})
		if err != nil {
			t.Fatalf("launch: %v", err)
		}
		return in.ID
	}
	// An orphan launched 13 hours ago whose dead-man switch did not fire,
	// and a live host that must survive the sweep.
	orphan := launch(time.Now().Add(-13 * time.Hour))
	live := launch(time.Now())
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: ec2ProviderBlock(sim) + `
resource "pgbench_ec2_sweep" "orphans" {}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_ec2_sweep.orphans", tfjsonpath.New("terminated_instance_ids"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(orphan)})),
					// The region comes from the provider's aws block here.
					statecheck.ExpectKnownValue("pgbench_ec2_sweep.orphans", tfjsonpath.New("id"),
						knownvalue.StringRegexp(regexp.MustCompile(`^us-east-2@\d{4}-`))),
				},
				Check: func(*terraform.State) error {
					deadline := time.Now().Add(10 * time.Second)
					for {
						o, _ := sim.Instance(orphan)
						if o.State == ec2sim.Terminated {
							break
						}
						if time.Now().After(deadline) {
							return fmt.Errorf("orphan %s is %s, want terminated", orphan, o.State)
						}
						time.Sleep(50 * time.Millisecond)
					}
					if l, _ := sim.Instance(live); l.State != ec2sim.Running && l.State != ec2sim.Pending {
						return fmt.Errorf("live instance %s is %s after the sweep, want it untouched", live, l.State)
					}
					return nil
				},
			},
		},
	})
}

func TestAccEC2HostValidation(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"no image", `instance_type = "m6i.metal"
    ssh_cidrs = ["10.0.0.0/8"]`, `(?s)Invalid EC2 Host.*ami and image`},
		{"both groups and cidrs", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    security_group_ids = ["sg-1"]`, `(?s)Invalid EC2 Host.*security_group_ids and ssh_cidrs`},
		{"no instance type", `ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]`, `instance_type`},
		{"bad lifetime", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    max_lifetime = "12 hours"`, `Invalid Duration`},
		{"key without private key", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    key_name = "bench"`, `private_key`},
		{"bad host key policy", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    host_key_policy = "trust"`, `(?s)host_key_policy.*value must be one of`},
		{"bad host key wait", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    host_key_wait = "ten minutes"`, `Invalid Duration`},
		{"agent and private key", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    key_name = "bench"
    private_key = "k"
    agent = true`, `Conflicting SSH Credentials`},
		{"agent without key name", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    agent = true`, `(?s)Missing Key Pair Name.*key_name`},
		{"managed tag", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["10.0.0.0/8"]
    tags = { owner = "me" }`, `(?s)Reserved Tag Key.*"owner"`},
		{"bad cidr", `instance_type = "m6i.metal"
    ami = "ami-0123456789abcdef0"
    ssh_cidrs = ["my laptop"]`, `must be an IPv4 CIDR`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      "resource \"pgbench_host\" \"x\" {\n  ec2 {\n    " + c.body + "\n  }\n}\n",
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `resource "pgbench_host" "x" {
  local = true
  ec2 {
    instance_type = "m6i.metal"
    ami           = "ami-0123456789abcdef0"
    ssh_cidrs     = ["10.0.0.0/8"]
  }
}`,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*local.*ec2`),
		}},
	})
}

func TestABCostUSD(t *testing.T) {
	cases := []struct {
		hourly, wall types.Float64
		want         types.Float64
	}{
		{types.Float64Value(14.45), types.Float64Value(3600), types.Float64Value(14.45)},
		{types.Float64Value(4.61), types.Float64Value(1800), types.Float64Value(2.305)},
		{types.Float64Null(), types.Float64Value(3600), types.Float64Null()},
		{types.Float64Value(14.45), types.Float64Null(), types.Float64Null()},
		{types.Float64Unknown(), types.Float64Value(60), types.Float64Null()},
	}
	for _, c := range cases {
		got := abCostUSD(c.hourly, c.wall)
		if got.IsNull() != c.want.IsNull() || math.Abs(got.ValueFloat64()-c.want.ValueFloat64()) > 1e-9 {
			t.Errorf("abCostUSD(%v, %v) = %v, want %v", c.hourly, c.wall, got, c.want)
		}
	}
}

// TestAccEC2HostRealAWS is the lifecycle against real EC2. It runs only
// with TF_ACC_AWS=1 and credentials in the environment, and costs money:
// TF_ACC_AWS_INSTANCE_TYPE (default t3.micro) in TF_ACC_AWS_REGION (default
// us-east-2), reached from TF_ACC_AWS_SSH_CIDR (required, e.g. your /32),
// logging in to Debian 12 as admin.
func TestAccEC2HostRealAWS(t *testing.T) {
	if os.Getenv("TF_ACC_AWS") != "1" {
		t.Skip("SKIPPED: the real-AWS lifecycle needs TF_ACC_AWS=1, AWS credentials and TF_ACC_AWS_SSH_CIDR; it launches (and terminates) a billed instance")
	}
	cidr := os.Getenv("TF_ACC_AWS_SSH_CIDR")
	if cidr == "" {
		t.Fatalf("TF_ACC_AWS=1 needs TF_ACC_AWS_SSH_CIDR, the CIDR this machine reaches EC2 from (e.g. 203.0.113.7/32)")
	}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	typ, region := env("TF_ACC_AWS_INSTANCE_TYPE", "t3.micro"), env("TF_ACC_AWS_REGION", "us-east-2")
	cfg := fmt.Sprintf(`
provider "pgbench" {
  aws {
    region = %q
  }
}

resource "pgbench_host" "metal" {
  install_dir = "/home/admin/pgbench"
  ec2 {
    instance_type = %q
    image {
      name   = %q
      owners = [%q]
    }
    ssh_cidrs    = [%q]
    max_lifetime = "1h"
    tags         = { purpose = "pgbench provider acceptance test" }
  }
}
`, region, typ, ec2TestImage, ec2TestOwner, cidr)
	name := "pgbench_host.metal"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			// Destroy returned only once EC2 reported terminated; the
			// state must not hold the host any more.
			if _, ok := s.RootModule().Resources[name]; ok {
				return fmt.Errorf("%s still in state after destroy", name)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("instance_id"), knownvalue.StringRegexp(regexp.MustCompile(`^i-[0-9a-f]+$`))),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_version"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("cpus"), knownvalue.NotNull()),
				},
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccEC2HostErrorAfterCreate: every RunInstances answer is an error
// although the instance was created. Launch finds it by its client token
// and terminates it; it stays in state until destroy has seen it
// terminated and deleted its key pair and group.
func TestAccEC2HostErrorAfterCreate(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				// More failures than the SDK has attempts (8).
				PreConfig:   func() { sim.FailAfterCreate(20) },
				Config:      ec2HostConfig(sim, dir, "", ""),
				ExpectError: regexp.MustCompile(`(?s)EC2 Launch Failed.*InternalError.*created\s+anyway\s+and\s+has\s+been\s+terminated.*Nothing\s+is\s+left\s+running`),
			},
			{
				PreConfig: func() {
					ins := sim.Instances()
					if len(ins) != 1 {
						t.Fatalf("instances = %d, want 1 (retries carry the same client token)", len(ins))
					}
					if s := ins[0].State; s != ec2sim.ShuttingDown && s != ec2sim.Terminated {
						t.Errorf("instance after the failed launch is %s, want terminated or shutting-down", s)
					}
					sim.FailAfterCreate(0)
				},
				// The refresh sees it terminated, drops it and deletes its
				// key pair and group (CheckDestroy); the plan re-creates it.
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// TestAccEC2StockImageLogin: stock images refuse root through cloud-init.
// Asking for root on Debian fails with what the server said and the user
// to set; left at its default, ssh_user is the image family's login user
// (ubuntu on Ubuntu, whose root device is /dev/sda1), and the runner is
// installed and the host tuned through its passwordless sudo.
func TestAccEC2StockImageLogin(t *testing.T) {
	testhost.LockKernel(t)
	sim := ec2TestRegion(t)
	testhost.SaveSysctl(t, "kernel.numa_balancing")
	dir := filepath.Join(t.TempDir(), "pgbench")
	host := func(image, owner, body string) string {
		return ec2ProviderBlock(sim) + fmt.Sprintf(`
resource "pgbench_host" "metal" {
  install_dir = %q
  ec2 {
    instance_type = "m6i.metal"
    image {
      name   = %q
      owners = [%q]
    }
    ssh_cidrs     = ["10.200.0.0/16"]
    poll_interval = "100ms"
%s
    root_volume {
      size_gb = 2000
    }
  }
  tuning {
    numa_balancing = "off"
  }
}
`, dir, image, owner, body)
	}
	name := "pgbench_host.metal"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				Config:      host(ec2TestImage, ec2TestOwner, `    ssh_user = "root"`),
				ExpectError: regexp.MustCompile(`(?s)refuses logins as root: it answered:\s+Please\s+login\s+as\s+the\s+user\s+"admin"\s+rather\s+than\s+the\s+user\s+"root"\..*ssh_user\s+=\s+"admin"`),
			},
			{
				Config: host("ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*", "099720109477", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("ssh_user"), knownvalue.StringExact("ubuntu")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("user"), knownvalue.StringExact("ubuntu")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_version"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("tuning_applied").AtMapKey("numa_balancing").AtMapKey("value"), knownvalue.StringExact("0")),
				},
				Check: func(s *terraform.State) error {
					id := s.RootModule().Resources[name].Primary.Attributes["ec2.instance_id"]
					in, ok := sim.Instance(id)
					if !ok || in.Host == nil || in.Host.LoginUser != "ubuntu" {
						return fmt.Errorf("instance %s = %+v, want a running Ubuntu instance whose login user is ubuntu", id, in)
					}
					if len(in.Volumes) != 1 || in.Volumes[0].Device != "/dev/sda1" || in.Volumes[0].SizeGB != 2000 {
						return fmt.Errorf("volumes of %s = %+v, want only the 2000 GB root on /dev/sda1", id, in.Volumes)
					}
					return nil
				},
			},
			{
				Config:           host("ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*", "099720109477", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccEC2PlacementGroup: a cluster placement group and two hosts that
// name it: both instances launch into it, in one zone; destroy terminates
// them, then deletes the group.
func TestAccEC2PlacementGroup(t *testing.T) {
	sim := ec2TestRegion(t)
	body := `    availability_zones = ["us-east-2b", "us-east-2c"]
    placement_group    = pgbench_placement_group.pg.name`
	cfg := ec2ProviderBlock(sim) + `
resource "pgbench_placement_group" "pg" {
  name          = "bench"
  tags          = { project = "test" }
  poll_interval = "100ms"
}
` + ec2HostResource(filepath.Join(t.TempDir(), "metal"), body, "") +
		strings.Replace(ec2HostResource(filepath.Join(t.TempDir(), "client"), body, ""), `"pgbench_host" "metal"`, `"pgbench_host" "client"`, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(st *terraform.State) error {
			if err := ec2NoneRunning(sim)(st); err != nil {
				return err
			}
			if g := sim.PlacementGroups(); len(g) != 0 {
				return fmt.Errorf("placement groups after destroy: %v, want none", g)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: ec2ProviderBlock(sim) + `
resource "pgbench_placement_group" "pg" {
  name     = "bench"
  strategy = "rack"
}`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)strategy.*value must be one of`),
			},
			{
				Config: cfg,
				Check: func(st *terraform.State) error {
					var ins []ec2sim.InstanceInfo
					if err := ec2Only(sim, 2, &ins)(st); err != nil {
						return err
					}
					for _, in := range ins {
						if in.PlacementGroup != "bench" || in.Zone != ins[0].Zone {
							return fmt.Errorf("instance %s in group %q, zone %s; want both in bench, in one zone", in.ID, in.PlacementGroup, in.Zone)
						}
					}
					if g := sim.PlacementGroups(); g["bench"] != "cluster" {
						return fmt.Errorf("placement groups %v, want bench, cluster", g)
					}
					return nil
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_placement_group.pg", tfjsonpath.New("placement_group_id"), knownvalue.StringRegexp(regexp.MustCompile(`^pg-`))),
					statecheck.ExpectKnownValue("pgbench_placement_group.pg", tfjsonpath.New("strategy"), knownvalue.StringExact("cluster")),
					statecheck.ExpectKnownValue("pgbench_host.metal", tfjsonpath.New("ec2").AtMapKey("availability_zone"), knownvalue.StringExact("us-east-2b")),
					statecheck.ExpectKnownValue("pgbench_host.client", tfjsonpath.New("ec2").AtMapKey("availability_zone"), knownvalue.StringExact("us-east-2b")),
				},
			},
			{
				ResourceName:      "pgbench_placement_group.pg",
				ImportState:       true,
				ImportStateId:     "bench",
				ImportStateVerify: true,
				// How often destroy polls is the configuration's alone.
				ImportStateVerifyIgnore: []string{"poll_interval"},
			},
		},
	})
}
