package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect/bisecttest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// bisectTestConfig is a pgbench_perf_bisect with a literal local
// connection and the given arguments, for plan-time tests.
func bisectTestConfig(args, workload string) string {
	return `
resource "pgbench_perf_bisect" "t" {
  host_connection = {
    mode        = "local"
    runner_path = "/nonexistent/pgbench-runner"
  }
  git_url = "https://git.postgresql.org/git/postgresql.git"
` + args + `
` + workload + `
}
`
}

const bisectWorkload = `
  workload {
    clients    = [1]
    duration   = "5s"
    iterations = 4
  }`

func TestPerfBisectValidation(t *testing.T) {
	refs := `
  good = "REL_15_0"
  bad  = "REL_15_1"`
	cases := []struct {
		name, args, workload, want string
	}{
		{"same refs", `
  good = "master"
  bad  = "master"`, bisectWorkload, diagPattern("Nothing To Bisect", `bad: good and bad are both "master": give bad a later commit than good`)},
		{"option as ref", `
  good = "-x"
  bad  = "master"`, bisectWorkload, diagPattern("Invalid Ref", `good: "-x" is not a git ref`)},
		{"direction", refs + `
  direction = "slower"`, bisectWorkload, diagPattern("Invalid Direction", `direction: "slower", want regression (bad is slower than good) or improvement`)},
		{"rounds", refs + `
  step_rounds = 0`, bisectWorkload, diagPattern("Invalid Step Rounds", "step_rounds: 0, want 1 to 10")},
		{"too few iterations", refs, `
  workload {
    clients    = [1]
    iterations = 2
  }`, diagPattern("Too Few Iterations For A Bisect", "workload.iterations: 2 iterations per variant give no test")},
		{"campaign field", refs, `
  workload {
    clients = [1]
    mode    = "nope"
  }`, diagPattern("Unknown Workload Mode", `workload.mode: unknown pgbench mode "nope"`)},
		{"no workload", refs, "", "Missing Workload"},
		{"client is the server", refs + `
  client {
    host_connection = {
      mode        = "local"
      runner_path = "/nonexistent/pgbench-runner"
    }
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, bisectWorkload, `(?s)Client Host Is The Server's Host`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tfresource.UnitTest(t, tfresource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []tfresource.TestStep{{
					Config:      bisectTestConfig(tc.args, tc.workload),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
	// The same refs, one only known at apply: nothing to say yet.
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []tfresource.TestStep{{
			Config: `
resource "terraform_data" "later" {
  input = "master"
}
` + bisectTestConfig(`
  good = terraform_data.later.output
  bad  = "master"
  configure_flags = ["--without-icu"]
  direction       = "improvement"
  step_rounds     = 2
  settings        = { shared_buffers = "128MB" }`, bisectWorkload),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
}

// TestAccPerfBisectLocal bisects the test repository through Terraform on
// this machine: the first apply is cut short by its create timeout, the
// second resumes and names the slow commit, a third plans nothing.
// It bisects the last three commits (one step), with the builds shared
// with the runner's bisect test (bisecttest.Cache) and kept at destroy.
// Each step's class is judged on measured figures: the slow commit takes
// throughput down by about 97%, far beyond what a loaded machine drifts
// (up to 40% within a cell), so it runs beside other tests.
func TestAccPerfBisectLocal(t *testing.T) {
	testhost.RequireRoot(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch", "ccache", "git"} {
		testhost.RequireCommand(t, tool)
	}
	repo := bisecttest.PostgreSQL(t)
	builds, ccache := bisecttest.Cache(t)
	runner := installRunner(t)
	gitCache := reachableTempDir(t)
	// c3 is good, c4 the slow one, c6 bad: one step, at c4.
	good := repo.Commits[2]
	if repo.Commits[3].Hash != repo.Slow.Hash {
		t.Fatalf("the slow commit is not the fourth: %+v", repo.Commits)
	}
	config := func(timeout string) string {
		return fmt.Sprintf(`
resource "pgbench_perf_bisect" "t" {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  git_url         = %q
  good            = %q
  bad             = "master"
  configure_flags = %s
  cflags          = %q
  profiling       = true
  build_root      = %q
  ccache_dir      = %q
  git_cache       = %q
  keep_builds     = true
  workload {
    scale      = 1
    clients    = [1]
    duration   = "2s"
    warmup     = "1s"
    iterations = 3
  }
  timeouts {
    create = %q
  }
}
`, runner, repo.Dir, good.Hash, pgbuildtest.ConfigureFlagsHCL(), pgbuildtest.OptFlags, builds, ccache, gitCache, timeout)
	}
	const addr = "pgbench_perf_bisect.t"
	var dir string
	var resumedAt time.Time
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if dir == "" {
				return fmt.Errorf("no report_dir recorded")
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
				return fmt.Errorf("data directories after destroy: stat = %v, want gone", err)
			}
			kept, _ := filepath.Glob(dir + ".destroyed-*")
			if len(kept) != 1 {
				return fmt.Errorf("reports moved aside: %v, want one directory", kept)
			}
			defer os.RemoveAll(kept[0])
			if _, err := os.Stat(filepath.Join(kept[0], bisect.SummaryFile)); err != nil {
				return fmt.Errorf("reports kept on the host: %v", err)
			}
			b, err := bisect.ReadBuilds(kept[0])
			if err != nil || len(b) != 3 {
				return fmt.Errorf("builds in the journal: %v, %v; want good, bad and one step", b, err)
			}
			for _, bl := range b {
				if _, err := os.Stat(bl.BinDir); err != nil {
					return fmt.Errorf("keep_builds: build %s removed: %v", bl.BinDir, err)
				}
			}
			return nil
		},
		Steps: []tfresource.TestStep{
			{
				Config:      config("45s"),
				ExpectError: regexp.MustCompile(`(?s)Performance Bisect Failed.*apply again with the same\s+configuration to\s+resume.*create\s+timeout`),
			},
			{
				PreConfig: func() { resumedAt = time.Now() },
				Config:    config("60m"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("outcome"), knownvalue.StringExact(bisect.OutcomeFirstBad)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_bad_commit"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"hash":        knownvalue.StringExact(repo.Slow.Hash),
						"subject":     knownvalue.StringExact(bisecttest.SlowSubject),
						"author_date": knownvalue.StringExact("2025-02-20T12:04:00Z"),
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoints_outcome"), knownvalue.StringExact(bisect.EndpointsConfirmed)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoints").AtSliceIndex(0).AtMapKey("bad_vs_good").AtMapKey("verdict"), knownvalue.StringExact("slower")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("steps"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("steps").AtSliceIndex(0).AtMapKey("commit"), knownvalue.StringExact(repo.Slow.Hash)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("steps").AtSliceIndex(0).AtMapKey("class"), knownvalue.StringExact(bisect.ClassBad)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary_markdown"),
						knownvalue.StringRegexp(regexp.MustCompile("(?s)First bad commit: `"+repo.Slow.Hash+"`.*## Steps.*pgbench-runner bisect"))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("report_dir"), knownvalue.StringFunc(func(d string) error {
						dir = d
						return nil
					})),
					// Resumed: the bisect is the one the first apply started.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("started_at"), knownvalue.StringFunc(func(s string) error {
						at, err := time.Parse(time.RFC3339, s)
						if err != nil {
							return err
						}
						if !at.Before(resumedAt.Truncate(time.Second)) {
							return fmt.Errorf("started at %s, not before the resuming apply at %s: it started over", s, resumedAt.Format(time.RFC3339))
						}
						return nil
					})),
				},
			},
			{
				Config:           config("60m"),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
	if dir != "" && !strings.HasPrefix(dir, filepath.Dir(runner)) {
		t.Errorf("report_dir %s is not beside the runner in %s", dir, filepath.Dir(runner))
	}
}
