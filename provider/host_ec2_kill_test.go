package provider

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// killedApply is a working directory whose terraform uses the provider
// served in this test process.
type killedApply struct {
	t    *testing.T
	tf   string
	work string
	env  string
}

// newKilledApply writes a configuration of one ec2 host (body goes into its
// ec2 block) and runs terraform init. The reattached provider runs in this
// process, whose working directory is not the configuration's as it would
// be under real Terraform: TF_DATA_DIR, set for the terraform commands
// and the provider alike, puts the launch journal where a real run keeps
// it, under the configuration's .terraform.
func newKilledApply(t *testing.T, sim *ec2sim.Server, body string) *killedApply {
	k := &killedApply{t: t, tf: os.Getenv("TF_ACC_TERRAFORM_PATH"), work: t.TempDir()}
	t.Setenv("TF_DATA_DIR", filepath.Join(k.work, ".terraform"))
	k.env = reattachProvider(t)
	cfg := `terraform {
  required_providers {
    pgbench = { source = "pgbench-tf/pgbench" }
  }
}
` + ec2HostConfig(sim, filepath.Join(k.work, "pgbench"), body, "")
	if err := os.WriteFile(filepath.Join(k.work, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := k.run("init", "-input=false", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("terraform init: %v\n%s", err, out)
	}
	return k
}

func (k *killedApply) run(args ...string) *exec.Cmd {
	return terraformCmd(k.tf, k.work, k.env, args...)
}

// applyAndKill starts terraform apply, kills it as soon as the region has
// one running instance (the apply then waits for SSH), and returns when
// it was launched.
func (k *killedApply) applyAndKill(sim *ec2sim.Server) time.Time {
	t := k.t
	apply := k.run("apply", "-auto-approve", "-input=false", "-no-color")
	logf, err := os.Create(filepath.Join(k.work, "apply.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	apply.Stdout, apply.Stderr = logf, logf
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	var launched time.Time
	for deadline := time.Now().Add(60 * time.Second); ; {
		if ins := sim.Instances(); len(ins) == 1 && ins[0].State == ec2sim.Running {
			launched = time.Now()
			break
		}
		if time.Now().After(deadline) {
			apply.Process.Kill()
			b, _ := os.ReadFile(filepath.Join(k.work, "apply.log"))
			t.Fatalf("no running instance within 60s of apply:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := apply.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	apply.Wait()
	// Nothing recorded the instance: a destroy now has nothing to destroy.
	if b, err := os.ReadFile(filepath.Join(k.work, "terraform.tfstate")); err == nil {
		var st struct {
			Resources []json.RawMessage `json:"resources"`
		}
		if json.Unmarshal(b, &st) == nil && len(st.Resources) != 0 {
			t.Logf("state after kill unexpectedly holds %d resources", len(st.Resources))
		}
	}
	return launched
}

// journal lists the launch journal entries of the working directory.
func (k *killedApply) journal() []string {
	paths, err := filepath.Glob(filepath.Join(k.work, ".terraform", "pgbench", "launches", "*.json"))
	if err != nil {
		k.t.Fatal(err)
	}
	return paths
}

// TestAccEC2KilledApplyDeadManSwitch kills `terraform apply` right after the
// instance launched, while it waits for SSH. A killed Terraform saves no
// state, so no destroy can know the instance: the instance's own dead-man
// switch (a power-off at max_lifetime scheduled from user data, with
// shutdown behaviour terminate) must stop it. The launch journal helps
// only an apply run again in the same directory; a CI job that dies with
// its workspace has nothing but this switch.
func TestAccEC2KilledApplyDeadManSwitch(t *testing.T) {
	preCheck(t)
	testhost.RequireRoot(t)
	sim := ec2TestRegion(t)
	sim.NoSSH(1) // the apply stays in its SSH wait until it is killed
	k := newKilledApply(t, sim, `    max_lifetime = "1m"`)
	launched := k.applyAndKill(sim)

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

// TestAccEC2KilledApplyAdopted kills `terraform apply` while its instance
// boots slowly (running, sshd not up yet) and applies again in the same
// directory: the second apply must adopt the instance the first launched,
// not launch a second one, and a destroy must then clean up all of it.
func TestAccEC2KilledApplyAdopted(t *testing.T) {
	preCheck(t)
	testhost.RequireRoot(t)
	sim := ec2TestRegion(t)
	sim.SlowSSH(1, 20*time.Second)
	k := newKilledApply(t, sim, "")
	k.applyAndKill(sim)
	first := sim.Instances()[0]

	// The killed create leaves its entry, naming the instance, and lets go
	// of it once its cancelled waits return.
	for deadline := time.Now().Add(30 * time.Second); ; {
		paths := k.journal()
		if len(paths) == 1 {
			if j, err := ec2host.LockLaunch(paths[0]); err == nil && j != nil {
				entry := j.Entry()
				j.Close()
				if entry.InstanceID != first.ID || entry.KeyName == "" || entry.SecurityGroupID == "" {
					t.Fatalf("journal entry after the kill = %+v, want instance %s, its key pair and group", entry, first.ID)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal entries 30s after the kill = %v, want one, unlocked", paths)
		}
		time.Sleep(100 * time.Millisecond)
	}

	out, err := k.run("apply", "-auto-approve", "-input=false", "-no-color").CombinedOutput()
	if err != nil {
		t.Fatalf("second terraform apply: %v\n%s", err, out)
	}
	if want := "Adopted instance " + first.ID; !strings.Contains(string(out), want) {
		t.Errorf("second apply does not say %q:\n%s", want, out)
	}
	if ins := sim.Instances(); len(ins) != 1 || ins[0].State != ec2sim.Running {
		t.Fatalf("instances after the second apply = %+v, want only %s, running", ins, first.ID)
	}
	show, err := k.run("show", "-json", "-no-color").Output()
	if err != nil {
		t.Fatalf("terraform show: %v", err)
	}
	var st struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string `json:"address"`
					Values  struct {
						EC2 struct {
							InstanceID string `json:"instance_id"`
							HostKey    string `json:"host_key"`
						} `json:"ec2"`
					} `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal(show, &st); err != nil {
		t.Fatalf("terraform show -json: %v\n%s", err, show)
	}
	if rs := st.Values.RootModule.Resources; len(rs) != 1 || rs[0].Values.EC2.InstanceID != first.ID || rs[0].Values.EC2.HostKey == "" {
		t.Fatalf("state = %+v, want pgbench_host.metal with instance %s and its host key", rs, first.ID)
	}
	if paths := k.journal(); len(paths) != 0 {
		t.Errorf("journal entries after the apply finished = %v, want none", paths)
	}

	if out, err := k.run("destroy", "-auto-approve", "-input=false", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("terraform destroy: %v\n%s", err, out)
	}
	if err := ec2NoneRunning(sim)(nil); err != nil {
		t.Error(err)
	}
	if ins := sim.Instances(); len(ins) != 1 {
		t.Errorf("instances ever launched = %d, want 1", len(ins))
	}
	if paths := k.journal(); len(paths) != 0 {
		t.Errorf("journal entries after destroy = %v, want none", paths)
	}
}
