package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/resultsdb/resultsdbtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccHistoryDataSource: the series in a real results database and the
// change point of the one with a step, filtered, with the URL from the
// provider's history block.
func TestAccHistoryDataSource(t *testing.T) {
	url := resultsdbtest.Start(t)
	db, err := resultsdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	entries := slices.Concat(resultsdbtest.Nightly("step", 30, 64, 18, 6, 1), resultsdbtest.Nightly("flat", 30, 1, -1, 0, 2))
	if _, err := db.Write(context.Background(), entries, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	change := knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"campaign": knownvalue.StringExact("step-018"), "index": knownvalue.Int64Exact(18),
		"recorded_at": knownvalue.StringExact("2026-11-19T04:00:00Z"),
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "pgbench" {
  history {
    database_url = %q
  }
}

data "pgbench_history" "all" {}

data "pgbench_history" "flat" {
  clients   = 1
  candidate = "patched"
}
`, url),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.pgbench_history.all", tfjsonpath.New("series"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectPartial(map[string]knownvalue.Check{"clients": knownvalue.Int64Exact(1), "points": knownvalue.Int64Exact(30),
						"host": knownvalue.StringExact("c6i.metal"), "changes": knownvalue.ListSizeExact(0),
						"last_campaign": knownvalue.StringExact("flat-029")}),
					knownvalue.ObjectPartial(map[string]knownvalue.Check{"clients": knownvalue.Int64Exact(64), "points": knownvalue.Int64Exact(30),
						"changes": knownvalue.ListExact([]knownvalue.Check{change})}),
				})),
				statecheck.ExpectKnownValue("data.pgbench_history.flat", tfjsonpath.New("series"), knownvalue.ListSizeExact(1)),
			},
		}},
	})
}

// TestAccHistoryURLNotPostgres: a URL that is not PostgreSQL's is refused
// at plan time, without repeating the password.
func TestAccHistoryURLNotPostgres(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
provider "pgbench" {
  history {
    database_url = "mysql://bench:hunter2@db.example/results"
  }
}

data "pgbench_runner" "this" {}
`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid Results Database URL.*not a PostgreSQL URL`),
			},
			{
				Config: `
data "pgbench_history" "h" {
  database_url = "https://db.example/results"
}
`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid Results Database URL.*not a PostgreSQL URL`),
			},
		},
	})
}

// TestAccABBenchmarkHistoryPending: an apply whose results database is
// down succeeds, the campaign stays pending beside the local history, and
// the next apply, with the database up, writes it.
func TestAccABBenchmarkHistoryPending(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	server := resultsdbtest.StartServer(t)
	runner := installRunner(t)
	local := filepath.Join(t.TempDir(), "results", "nightly")
	hist := filepath.Join(filepath.Dir(local), historyFile)
	config := fmt.Sprintf(`
provider "pgbench" {
  history {
    database_url = %q
  }
}

resource "pgbench_ab_benchmark" "t" {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  local_dir = %q
  variant {
    name       = "a"
    bin_dir    = %q
    huge_pages = "off"
  }
  variant {
    name       = "b"
    bin_dir    = %q
    huge_pages = "off"
  }
  workload {
    scale      = 1
    clients    = [1]
    duration   = "1s"
    iterations = 3
  }
}
`, server.URL, runner, local, systemPGBin, systemPGBin)
	var id string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { server.Stop(t) },
				Config:    config,
				Check: func(s *terraform.State) error {
					id = s.RootModule().Resources["pgbench_ab_benchmark.t"].Primary.ID
					pending, err := report.Pending(hist)
					if err != nil || !slices.Equal(pending, []string{id}) {
						return fmt.Errorf("pending = %v, %v; want [%s]", pending, err, id)
					}
					b, err := os.ReadFile(hist)
					if err != nil || !regexp.MustCompile(regexp.QuoteMeta(id)).Match(b) {
						return fmt.Errorf("the local history lacks campaign %s: %v", id, err)
					}
					return nil
				},
			},
			{
				PreConfig: func() { server.Start(t) },
				Config:    config,
				Check: func(*terraform.State) error {
					if pending, err := report.Pending(hist); err != nil || len(pending) != 0 {
						return fmt.Errorf("still pending after the database came back: %v, %v", pending, err)
					}
					db, err := resultsdb.Open(context.Background(), server.URL)
					if err != nil {
						return err
					}
					defer db.Close()
					got, err := db.Entries(context.Background(), resultsdb.Filter{})
					if err != nil {
						return err
					}
					if len(got) != 1 || got[0].Campaign != id || got[0].Baseline.Name != "a" || got[0].Candidate.Name != "b" {
						return fmt.Errorf("the database holds %+v, want the one comparison of campaign %s", got, id)
					}
					return nil
				},
			},
		},
	})
}
