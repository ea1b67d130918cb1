package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestAccEC2HostKeyFromConsole: by default the pinned host key is the one
// the instance's console shows, which is its sshd's; console_or_first_use
// falls back to first use on a silent console; and a console that shows
// another key than the server presents fails the create, leaving the
// instance in state (tainted) for destroy to terminate.
func TestAccEC2HostKeyFromConsole(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	name := "pgbench_host.metal"
	source := func(want string) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("host_key_source"), knownvalue.StringExact(want))
	}
	// hostKeyIs checks that state pinned the sshd key of the newest instance.
	hostKeyIs := func(s *terraform.State) error {
		ins := sim.Instances()
		last := ins[len(ins)-1]
		if got, want := s.RootModule().Resources[name].Primary.Attributes["ec2.host_key"], last.Host.HostKeyFingerprint; got != want {
			return fmt.Errorf("ec2.host_key = %q, want the sshd's %q", got, want)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				Config:            ec2HostConfig(sim, dir, "", ""),
				Check:             resource.ComposeTestCheckFunc(ec2Only(sim, 1, nil), hostKeyIs),
				ConfigStateChecks: []statecheck.StateCheck{source("console")},
			},
			{
				// A new policy replaces the instance; its console never
				// shows the keys, so the key is trusted on first use.
				PreConfig: func() { sim.ConsoleSilent(1) },
				Config: ec2HostConfig(sim, dir, `    host_key_policy = "console_or_first_use"
    host_key_wait   = "1s"`, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(name, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				Check:             resource.ComposeTestCheckFunc(ec2Only(sim, 2, nil), hostKeyIs),
				ConfigStateChecks: []statecheck.StateCheck{source("first_use")},
			},
			{
				// A man in the middle: the console shows one key, the
				// server at the address presents another.
				PreConfig:   func() { sim.ConsoleForgery(1) },
				Config:      ec2HostConfig(sim, dir, "", ""),
				ExpectError: regexp.MustCompile(`(?s)EC2 Host Key Mismatch.*the\s+console\s+of\s+instance\s+i-[0-9a-f]+\s+showed\s+SHA256:\S+\s+but\s+the\s+server\s+at\s+10\.200\.\d+\.2:22\s+presented\s+SHA256:.*is\s+in\s+state\s+and\s+tainted`),
			},
			{
				// The refused instance runs and is in state, tainted: the
				// plan replaces it (and destroy terminates it, CheckDestroy).
				PreConfig: func() {
					ins := sim.Instances()
					if len(ins) != 3 || ins[2].State != ec2sim.Running {
						t.Errorf("after the refused create instances = %+v, want a third one running", ins)
					}
				},
				Config:             ec2HostConfig(sim, dir, "", ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectResourceAction(name, plancheck.ResourceActionDestroyBeforeCreate)},
				},
			},
		},
	})
}

// TestEC2HostKeysPolicy: what ec2HostKeys does with a silent console
// under each policy: console fails naming the instance, the fallback
// warns and trusts on first use, first_use does not read the console.
func TestEC2HostKeysPolicy(t *testing.T) {
	sim := ec2TestRegion(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sim.ConsoleSilent(1)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageName: ec2TestImage, ImageOwners: []string{ec2TestOwner}})
	if err != nil {
		t.Fatal(err)
	}
	model := func(policy string) *ec2Model {
		return &ec2Model{HostKeyPolicy: types.StringValue(policy), HostKeyWait: types.StringValue("700ms")}
	}

	var diags diag.Diagnostics
	keys, err := ec2HostKeys(ctx, c, model(hostKeyConsole), in.ID, &diags)
	if err == nil || !strings.Contains(err.Error(), in.ID) || len(keys) != 0 || diags.WarningsCount() != 0 {
		t.Errorf("console policy, silent console: keys %q, err %v, %d warnings; want an error naming %s and no warning", keys, err, diags.WarningsCount(), in.ID)
	}

	diags = nil
	keys, err = ec2HostKeys(ctx, c, model(hostKeyConsoleOrFirstUse), in.ID, &diags)
	if err != nil || len(keys) != 0 {
		t.Fatalf("console_or_first_use, silent console: keys %q, err %v; want none, no error", keys, err)
	}
	if w := diags.Warnings(); len(w) != 1 || w[0].Summary() != "Host Key Not Verified" || !strings.Contains(w[0].Detail(), in.ID) || !strings.Contains(w[0].Detail(), "first_use") {
		t.Errorf("fallback warnings = %v, want one Host Key Not Verified naming %s and first_use", w, in.ID)
	}

	before := sim.Calls("GetConsoleOutput")
	diags = nil
	if keys, err := ec2HostKeys(ctx, c, model(hostKeyFirstUse), in.ID, &diags); err != nil || len(keys) != 0 || diags.WarningsCount() != 0 {
		t.Errorf("first_use: keys %q, err %v, %d warnings; want nothing", keys, err, diags.WarningsCount())
	}
	if got := sim.Calls("GetConsoleOutput"); got != before {
		t.Errorf("first_use read the console (%d calls), want none", got-before)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
}
