package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestAccEC2HostImport adopts two instances launched outside Terraform
// with a key pair of their own: one with `terraform import` and the key in
// the configuration, one with an import block and the key in an ssh-agent. Import reads the instance (DescribeInstances); the first
// apply is an in-place update that pins the host key from the console,
// logs in with the configured key and installs the runner; the plan after
// it is empty, and destroy terminates both.
func TestAccEC2HostImport(t *testing.T) {
	sim := ec2TestRegion(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "adopt.pem")
	if err := os.WriteFile(keyFile, kp.PrivateKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImportKeyPair(ctx, "adopt", kp.PublicKeyLine, nil); err != nil {
		t.Fatalf("import key pair: %v", err)
	}
	launch := func() string {
		in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "m6i.metal", ImageName: ec2TestImage, ImageOwners: []string{ec2TestOwner},
			KeyName: "adopt", Owner: "someone", Tags: map[string]string{"project": "legacy"}})
		if err != nil {
			t.Fatalf("launch: %v", err)
		}
		if _, err := c.WaitRunning(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	a, b := launch(), launch()
	// The second instance's key is in an ssh-agent only: no key in state.
	startSSHAgent(t, string(kp.PrivateKeyPEM))
	host := func(name, key string) string {
		return fmt.Sprintf(`
resource "pgbench_host" %q {
  install_dir = %q
  ec2 {
    instance_type = "m6i.metal"
    image {
      name   = %q
      owners = [%q]
    }
    ssh_cidrs     = ["10.200.0.0/16"]
    key_name      = "adopt"
    %s
    poll_interval = "100ms"
    tags          = { project = "legacy" }
  }
}
`, name, filepath.Join(t.TempDir(), name), ec2TestImage, ec2TestOwner, key)
	}
	one := ec2ProviderBlock(sim) + host("a", fmt.Sprintf("private_key = file(%q)", keyFile))
	both := one + host("b", "agent = true") + fmt.Sprintf(`
import {
  to = pgbench_host.b
  id = %q
}
`, b)
	adopted := func(name, id string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(name, tfjsonpath.New("id"), knownvalue.StringExact(id)),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("host_key_source"), knownvalue.StringExact("console")),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("host_key"), knownvalue.StringRegexp(regexp.MustCompile(`^SHA256:`))),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("ssh_user"), knownvalue.StringExact("admin")),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("generated_key_name"), knownvalue.Null()),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("runner_version"), knownvalue.NotNull()),
			statecheck.ExpectKnownValue(name, tfjsonpath.New("connection_info").AtMapKey("host"), knownvalue.NotNull()),
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, in := range sim.Instances() {
				if in.State != ec2sim.Terminated {
					return fmt.Errorf("instance %s is %s after destroy, want terminated", in.ID, in.State)
				}
			}
			// The key pair was the user's, not the provider's: it stays.
			if k := sim.KeyPairs(); !slices.Equal(k, []string{"adopt"}) {
				return fmt.Errorf("key pairs after destroy = %v, want only the user's adopt", k)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config:             one,
				ResourceName:       "pgbench_host.a",
				ImportState:        true,
				ImportStateId:      a,
				ImportStatePersist: true,
				ImportStateCheck: func(s []*terraform.InstanceState) error {
					if len(s) != 1 {
						return fmt.Errorf("imported %d resources, want 1", len(s))
					}
					got := s[0].Attributes
					in, _ := sim.Instance(a)
					for k, want := range map[string]string{"id": a, "ec2.instance_id": a, "ec2.image_id": "ami-0a9b8c7d6e5f40312",
						"ec2.availability_zone": in.Zone, "ec2.private_ip": in.Host.Addr, "ec2.tags.project": "legacy",
						"ec2.expires_at": in.Tags["expires-at"], "ec2.host_key": ""} {
						if got[k] != want {
							return fmt.Errorf("imported %s = %q, want %q", k, got[k], want)
						}
					}
					return nil
				},
			},
			{
				Config: one,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_host.a", plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: adopted("pgbench_host.a", a),
				Check: func(*terraform.State) error {
					if n, calls := len(sim.Instances()), sim.Calls("RunInstances"); n != 2 || calls != 2 {
						return fmt.Errorf("after adopting: %d instances, %d RunInstances; want the 2 launched outside Terraform", n, calls)
					}
					return nil
				},
			},
			{
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_host.a", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("pgbench_host.b", plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: append(adopted("pgbench_host.b", b),
					statecheck.ExpectKnownValue("pgbench_host.b", tfjsonpath.New("connection_info").AtMapKey("agent"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("pgbench_host.b", tfjsonpath.New("connection_info").AtMapKey("private_key"), knownvalue.Null())),
			},
			{
				Config:           both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
