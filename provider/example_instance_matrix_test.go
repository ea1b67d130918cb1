package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccEC2ExampleInstanceMatrix applies examples/instance-matrix as it is
// with the terraform CLI against the simulated region, with two instance
// types and the work turned down (the installed PostgreSQL for both
// variants, one client count, 1 s runs): each type gets its own instance
// and campaign, the combined table has a row per type, and destroy
// terminates both instances. The simulated instances share this machine,
// so here the runner's host lock makes the two measurements take turns;
// on EC2 they run at once. (The testing framework cannot address for_each
// instances in state, hence the CLI.)
func TestAccEC2ExampleInstanceMatrix(t *testing.T) {
	preCheck(t)
	example, err := filepath.Abs("../examples/instance-matrix/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	testhost.LockKernel(t)
	sim := ec2TestRegion(t)
	testhost.SaveSysctl(t, "kernel.numa_balancing")
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	env := reattachProvider(t)

	work := t.TempDir()
	// Terraform starts a provider in the working directory, where the
	// reports are collected; the reattached one runs in this process.
	t.Chdir(work)
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"m6i.metal", "r8i.metal-96xl"}
	vars, _ := json.Marshal(map[string]any{
		"aws_endpoint": sim.URL, "aws_servicequotas_endpoint": sim.URL, "instance_types": types, "ssh_cidrs": []string{"10.200.0.0/16"},
		"install_dir": reachableTempDir(t), "poll_interval": "100ms", "system_bin_dir": systemPGBin,
		"shared_buffers": "32MB", "scale": 1, "clients": []int{2}, "duration": "1s", "warmup": "1s", "iterations": 3,
	})
	for name, b := range map[string][]byte{"main.tf": src, "terraform.tfvars.json": vars} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := terraformCmd(tf, work, env, append(args, "-no-color")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("terraform %v: %v\n%s\n%s", args, err, out, stderr.String())
		}
		return out
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			terraformCmd(tf, work, env, "destroy", "-auto-approve", "-input=false", "-no-color").Run()
		}
	})
	run("init", "-input=false")
	run("apply", "-auto-approve", "-input=false")

	var outputs struct {
		Comparison struct{ Value string } `json:"comparison"`
		Instances  struct {
			Value map[string]struct {
				ID string `json:"id"`
			}
		} `json:"instances"`
	}
	if err := json.Unmarshal(run("output", "-json"), &outputs); err != nil {
		t.Fatal(err)
	}
	t.Logf("comparison:\n%s", outputs.Comparison.Value)
	for _, typ := range types {
		row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(typ) +
			` \| 2 \| \d+ \| \d+ \| [+-]\d+\.\d \| [+-]\d+\.\d to [+-]\d+\.\d \| (faster|slower|no-difference) \|$`)
		if !row.MatchString(outputs.Comparison.Value) {
			t.Errorf("comparison has no complete row for %s:\n%s", typ, outputs.Comparison.Value)
		}
		in, ok := sim.Instance(outputs.Instances.Value[typ].ID)
		if !ok || in.Type != typ || in.State != ec2sim.Running {
			t.Errorf("instance of %s = %+v, want a running %s", typ, in, typ)
		}
	}
	if got := len(sim.Instances()); got != len(types) {
		t.Errorf("instances launched = %d, want one per type (%d)", got, len(types))
	}

	run("destroy", "-auto-approve", "-input=false")
	destroyed = true
	var states []string
	for _, in := range sim.Instances() {
		states = append(states, in.Type+":"+in.State)
	}
	slices.Sort(states)
	if want := []string{"m6i.metal:terminated", "r8i.metal-96xl:terminated"}; !slices.Equal(states, want) {
		t.Errorf("after destroy instances = %v, want %v", states, want)
	}
	if err := ec2NoneRunning(sim)(nil); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(work, "pgbench-results")); err != nil {
		t.Errorf("no collected reports in the working directory: %v", err)
	}
}
