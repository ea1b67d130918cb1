package provider

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const exampleCIDir = "../examples/ci"

// terraformBin is the terraform the acceptance tests use, or the one on PATH.
func terraformBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	return testhost.RequireCommand(t, "terraform")
}

// terraformIn runs terraform in dir with env added and returns its
// stdout, failing the test when it exits non-zero.
func terraformIn(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(terraformBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0"), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("terraform %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// TestExampleCIValidates checks examples/ci's Terraform against the real
// provider's schema with real terraform: init and validate, offline (the
// provider is served from this process), and terraform fmt.
func TestExampleCIValidates(t *testing.T) {
	work, env := validateExample(t, exampleCIDir)
	var v struct {
		Valid bool `json:"valid"`
	}
	// The provider's schema is what validated it: an attribute it does not
	// have makes the same directory invalid.
	bogus := "resource \"pgbench_ab_benchmark\" \"bogus\" {\n  host_connection = pgbench_host.ci.connection_info\n  no_such_attribute = 1\n}\n"
	if err := os.WriteFile(filepath.Join(work, "bogus.tf"), []byte(bogus), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(terraformBin(t), "validate", "-json", "-no-color")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", env[0])
	out, _ := cmd.Output()
	if err := json.Unmarshal(out, &v); err != nil || v.Valid || !strings.Contains(string(out), "no_such_attribute") {
		t.Errorf("with an unknown attribute: valid %v (%v), want invalid naming it\n%s", v.Valid, err, out)
	}
}

// workflow is the part of a GitHub Actions workflow the example promises.
type workflow struct {
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]struct {
		TimeoutMinutes int `yaml:"timeout-minutes"`
		Defaults       struct {
			Run struct {
				WorkingDirectory string `yaml:"working-directory"`
			} `yaml:"run"`
		} `yaml:"defaults"`
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

type workflowStep struct {
	Name           string            `yaml:"name"`
	ID             string            `yaml:"id"`
	If             string            `yaml:"if"`
	Uses           string            `yaml:"uses"`
	Run            string            `yaml:"run"`
	With           map[string]string `yaml:"with"`
	TimeoutMinutes int               `yaml:"timeout-minutes"`
}

func readWorkflow(t *testing.T) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(exampleCIDir, "workflow.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("workflow.yml does not parse: %v", err)
	}
	if len(w.Jobs) != 1 {
		t.Fatalf("workflow.yml has %d jobs, want 1", len(w.Jobs))
	}
	return w
}

// stepIndex returns the index of the first step for which match holds, or -1.
func stepIndex(steps []workflowStep, match func(workflowStep) bool) int {
	for i, s := range steps {
		if match(s) {
			return i
		}
	}
	return -1
}

func TestExampleCIWorkflow(t *testing.T) {
	w := readWorkflow(t)
	if w.Permissions["id-token"] != "write" {
		t.Errorf("permissions = %v, want id-token: write for the OIDC role", w.Permissions)
	}
	for _, job := range w.Jobs {
		if job.Defaults.Run.WorkingDirectory != w.Env["TF_DIR"] || job.Defaults.Run.WorkingDirectory == "" {
			t.Errorf("working directory %q, want the TF_DIR %q", job.Defaults.Run.WorkingDirectory, w.Env["TF_DIR"])
		}
		steps := job.Steps
		find := func(what string, match func(workflowStep) bool) (int, workflowStep) {
			t.Helper()
			i := stepIndex(steps, match)
			if i < 0 {
				t.Fatalf("no step that %s", what)
			}
			return i, steps[i]
		}
		runs := func(cmd string) func(workflowStep) bool {
			return func(s workflowStep) bool { return strings.Contains(s.Run, cmd) }
		}
		uses := func(action string) func(workflowStep) bool {
			return func(s workflowStep) bool { return strings.HasPrefix(s.Uses, action+"@") }
		}
		checkout, _ := find("checks out", uses("actions/checkout"))
		setup, st := find("sets up Terraform", uses("hashicorp/setup-terraform"))
		if st.With["terraform_wrapper"] != "false" {
			t.Errorf("setup-terraform with %v, want terraform_wrapper false so jq reads terraform's own output", st.With)
		}
		creds, cs := find("gets AWS credentials", uses("aws-actions/configure-aws-credentials"))
		if cs.With["role-to-assume"] == "" || cs.With["aws-region"] == "" {
			t.Errorf("configure-aws-credentials with %v, want role-to-assume and aws-region", cs.With)
		}
		initStep, _ := find("runs terraform init", runs("terraform init"))
		apply, as := find("runs terraform apply", runs("terraform apply"))
		if as.TimeoutMinutes == 0 || as.TimeoutMinutes >= job.TimeoutMinutes {
			t.Errorf("apply timeout %d min, job %d min: want the apply's shorter, leaving time to destroy", as.TimeoutMinutes, job.TimeoutMinutes)
		}
		outputs, ops := find("reads terraform output -json", runs("terraform output -json"))
		upload, us := find("uploads the reports", uses("actions/upload-artifact"))
		if !strings.Contains(us.If, "always()") || !strings.HasSuffix(us.With["path"], "pgbench-results/") {
			t.Errorf("upload step if %q, path %q; want always() and the pgbench-results/ directory", us.If, us.With["path"])
		}
		check, ks := find("fails on a slower verdict", runs(`select(.verdict == "slower")`))
		if ks.If != "" {
			t.Errorf("slow-down check if %q, want it to run only after a successful apply", ks.If)
		}
		destroy, ds := find("runs terraform destroy", runs("terraform destroy"))
		if !strings.Contains(ds.If, "always()") || ds.TimeoutMinutes == 0 {
			t.Errorf("destroy step if %q, timeout %d; want always() with a timeout", ds.If, ds.TimeoutMinutes)
		}
		if !strings.Contains(ops.If, "always()") {
			t.Errorf("outputs step if %q, want always() so a failed apply's partial outputs are uploaded", ops.If)
		}
		order := []int{checkout, setup, creds, initStep, apply, outputs, upload, check, destroy}
		for i := 1; i < len(order); i++ {
			if order[i] <= order[i-1] {
				t.Errorf("steps out of order: %v (checkout, setup, credentials, init, apply, outputs, upload, check, destroy)", order)
				break
			}
		}
		if destroy != len(steps)-1 {
			t.Errorf("destroy is step %d of %d, want the last", destroy+1, len(steps))
		}
	}
}

// TestExampleCISlowDownCheck runs the workflow's check step with bash and
// jq on what `terraform output -json` prints for the example's comparisons
// output: a slower comparison fails it, faster and no-difference pass, and
// no comparisons at all (a campaign that did not finish) fail it.
func TestExampleCISlowDownCheck(t *testing.T) {
	testhost.RequireCommand(t, "jq")
	bash := testhost.RequireCommand(t, "bash")
	w := readWorkflow(t)
	var script string
	for _, job := range w.Jobs {
		if i := stepIndex(job.Steps, func(s workflowStep) bool { return strings.Contains(s.Run, `"slower"`) }); i >= 0 {
			script = job.Steps[i].Run
		}
	}
	if script == "" {
		t.Fatal("no slow-down check step")
	}
	comparison := func(clients int, delta float64, verdict string) string {
		b, _ := json.Marshal(map[string]any{"clients": clients, "baseline": "stock", "candidate": "patched",
			"delta_pct": delta, "ci_low_pct": delta - 1, "ci_high_pct": delta + 1, "p_adjusted": 0.01, "verdict": verdict})
		return string(b)
	}
	tests := []struct {
		name, value string
		wantFail    bool
		wantOut     string
	}{
		{"slower", "[" + comparison(1, 0.2, "no-difference") + "," + comparison(64, -3.5, "slower") + "]", true,
			"::error::patched is slower than stock at 64 clients: -3.5% [-4.5%, -2.5%]"},
		{"faster and same", "[" + comparison(1, 0.2, "no-difference") + "," + comparison(64, 4, "faster") + "]", false,
			"no comparison is significantly slower"},
		{"none", "[]", true, "::error::no comparisons"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// Real terraform prints the outputs document, from a state
			// whose comparisons output holds the test's value.
			cfg := "output \"comparisons\" {\n  value = jsondecode(" + hclString(tt.value) + ")\n}\n"
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			terraformIn(t, dir, nil, "apply", "-auto-approve", "-no-color")
			out := terraformIn(t, dir, nil, "output", "-json")
			if err := os.MkdirAll(filepath.Join(dir, "pgbench-results"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "pgbench-results", "outputs.json"), out, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, "-e", "-c", script)
			cmd.Dir = dir
			got, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("check failed = %v (%v), want %v\n%s", failed, err, tt.wantFail, got)
			}
			if !strings.Contains(string(got), tt.wantOut) {
				t.Errorf("check printed:\n%s\nwant %q", got, tt.wantOut)
			}
		})
	}
}

// hclString quotes s as an HCL string literal (JSON's escapes are HCL's).
func hclString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// validateExample copies the Terraform files of dir into a new directory
// and checks them with real terraform against this provider's schema
// (served from this process, offline): fmt, init and validate with no
// diagnostics. It returns the directory and the environment it used.
func validateExample(t *testing.T, dir string) (string, []string) {
	t.Helper()
	work := t.TempDir()
	tfFiles, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(tfFiles) == 0 {
		t.Fatalf("no Terraform files in %s (%v)", dir, err)
	}
	for _, f := range tfFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"TF_REATTACH_PROVIDERS=" + reattachProvider(t)}
	terraformIn(t, work, env, "fmt", "-check", "-diff")
	terraformIn(t, work, env, "init", "-backend=false", "-no-color")
	out := terraformIn(t, work, env, "validate", "-json", "-no-color")
	var v struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Severity, Summary, Detail string
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("terraform validate -json: %v\n%s", err, out)
	}
	if !v.Valid || len(v.Diagnostics) > 0 {
		t.Errorf("%s: valid %v, diagnostics %+v; want valid with none", dir, v.Valid, v.Diagnostics)
	}
	return work, env
}
