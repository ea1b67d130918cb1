package provider

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccEC2KilledApplyDeadManSwitch kills `terraform apply` right after the
// instance launched, while it waits for SSH. A killed Terraform saves no
// state, so no destroy can know the instance: the instance's own dead-man
// switch (a power-off at max_lifetime scheduled from user data, with
// shutdown behaviour terminate) must stop it.
func TestAccEC2KilledApplyDeadManSwitch(t *testing.T) {
	preCheck(t)
	testhost.RequireRoot(t)
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	sim := ec2TestRegion(t)
	sim.NoSSH(1) // the apply stays in its SSH wait until it is killed

	env := reattachProvider(t)

	work := t.TempDir()
	cfg := `terraform {
  required_providers {
    pgbench = { source = "pgbench-tf/pgbench" }
  }
}
` + ec2HostConfig(sim, filepath.Join(work, "pgbench"), `    max_lifetime = "1m"`, "")
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(tf, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+env, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		return cmd
	}
	if out, err := run("init", "-input=false", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("terraform init: %v\n%s", err, out)
	}
	apply := run("apply", "-auto-approve", "-input=false", "-no-color")
	logf, err := os.Create(filepath.Join(work, "apply.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	apply.Stdout, apply.Stderr = logf, logf
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	launched := time.Now()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if ins := sim.Instances(); len(ins) == 1 && ins[0].State == ec2sim.Running {
			launched = time.Now()
			break
		}
		if time.Now().After(deadline) {
			apply.Process.Kill()
			b, _ := os.ReadFile(filepath.Join(work, "apply.log"))
			t.Fatalf("no running instance within 60s of apply:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := apply.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	apply.Wait()

	// Nothing recorded the instance: a destroy now has nothing to destroy.
	if b, err := os.ReadFile(filepath.Join(work, "terraform.tfstate")); err == nil {
		var st struct {
			Resources []json.RawMessage `json:"resources"`
		}
		if json.Unmarshal(b, &st) == nil && len(st.Resources) != 0 {
			t.Logf("state after kill unexpectedly holds %d resources", len(st.Resources))
		}
	}
	for deadline := launched.Add(2 * time.Minute); ; {
		ins := sim.Instances()
		if len(ins) != 1 {
			t.Fatalf("instances = %d, want the 1 launched", len(ins))
		}
		if ins[0].State == ec2sim.Terminated {
			t.Logf("instance %s terminated by its dead-man switch %s after launch", ins[0].ID, time.Since(launched).Round(time.Second))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s 2 minutes after launch with max_lifetime 1m, want terminated by the dead-man switch", ins[0].ID, ins[0].State)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
