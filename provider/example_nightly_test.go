package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const exampleNightlyDir = "../examples/nightly"

// TestExampleNightlyValidates: both configurations of examples/nightly
// are valid against the provider's schema.
func TestExampleNightlyValidates(t *testing.T) {
	validateExample(t, exampleNightlyDir)
	validateExample(t, filepath.Join(exampleNightlyDir, "bisect"))
}

// TestExampleNightlyWorkflow: a scheduled nightly job that applies and
// always destroys, and a bisect job that runs after it only when it found
// a new regression, in the directory the workflow's comment names.
func TestExampleNightlyWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(exampleNightlyDir, "workflow.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		On struct {
			Schedule []struct {
				Cron string `yaml:"cron"`
			} `yaml:"schedule"`
		} `yaml:"on"`
		Env  map[string]string `yaml:"env"`
		Jobs map[string]struct {
			Needs    string            `yaml:"needs"`
			If       string            `yaml:"if"`
			Outputs  map[string]string `yaml:"outputs"`
			Defaults struct {
				Run struct {
					WorkingDirectory string `yaml:"working-directory"`
				} `yaml:"run"`
			} `yaml:"defaults"`
			Steps []workflowStep `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("workflow.yml does not parse: %v", err)
	}
	if len(w.On.Schedule) != 1 || len(strings.Fields(w.On.Schedule[0].Cron)) != 5 {
		t.Errorf("schedule %+v, want one cron line", w.On.Schedule)
	}
	if !strings.Contains(w.Env["PGBENCH_HISTORY_DATABASE_URL"], "secrets.") {
		t.Errorf("PGBENCH_HISTORY_DATABASE_URL = %q, want it from a secret", w.Env["PGBENCH_HISTORY_DATABASE_URL"])
	}
	nightly, bisect := w.Jobs["nightly"], w.Jobs["bisect"]
	if nightly.Outputs["regression"] == "" || bisect.Needs != "nightly" || !strings.Contains(bisect.If, "needs.nightly.outputs.regression") {
		t.Errorf("bisect needs %q if %q, nightly outputs %v: want the bisect to run after the nightly job on its regression output",
			bisect.Needs, bisect.If, nightly.Outputs)
	}
	for name, dir := range map[string]string{"nightly": "ci/nightly", "bisect": "ci/nightly/bisect"} {
		job := w.Jobs[name]
		if job.Defaults.Run.WorkingDirectory != dir {
			t.Errorf("%s runs in %q, want %q", name, job.Defaults.Run.WorkingDirectory, dir)
		}
		apply := stepIndex(job.Steps, func(s workflowStep) bool { return strings.Contains(s.Run, "terraform apply") })
		destroy := stepIndex(job.Steps, func(s workflowStep) bool { return strings.Contains(s.Run, "terraform destroy") })
		if apply < 0 || destroy < apply || !strings.Contains(job.Steps[destroy].If, "always()") {
			t.Errorf("%s: apply at step %d, destroy at %d: want a destroy after the apply that always runs", name, apply, destroy)
		}
	}
}
