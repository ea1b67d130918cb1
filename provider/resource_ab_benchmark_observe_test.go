package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/profile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccABBenchmarkObserve applies a campaign with an observe block on the
// local host: the counters, the client's CPU and one profiled run per
// variant come back as computed attributes, and the pprof files and the
// flame graph are collected into local_dir under profiles/.
func TestAccABBenchmarkObserve(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	if err := profile.Check(context.Background()); err != nil {
		testhost.Skip(t, "perf cannot record here: %v", err)
	}
	runner := installRunner(t)
	local := filepath.Join(t.TempDir(), "report")
	config := fmt.Sprintf(`
resource "pgbench_ab_benchmark" "t" {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  local_dir = %q
  variant {
    name       = "index"
    bin_dir    = %q
    huge_pages = "off"
  }
  variant {
    name       = "seqscan"
    bin_dir    = %q
    settings   = { enable_indexscan = "off", enable_bitmapscan = "off" }
    huge_pages = "off"
  }
  workload {
    scale      = 1
    clients    = [2]
    duration   = "2s"
    iterations = 3
  }
  observe {
    wait_sample_interval = "200ms"
    profile              = "one-per-cell"
    profile_frequency    = 199
  }
}
`, runner, local, systemPGBin, systemPGBin)
	cell := tfjsonpath.New("results").AtSliceIndex(0)
	cmp := cell.AtMapKey("comparisons").AtSliceIndex(0)
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []tfresource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", cell.AtMapKey("variants").AtMapKey("seqscan").AtMapKey("profile"),
					knownvalue.StringExact("profiles/c2-seqscan.pb.gz")),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", cell.AtMapKey("variants").AtMapKey("seqscan").AtMapKey("client_bound_runs"),
					knownvalue.Int64Exact(0)),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", cell.AtMapKey("variants").AtMapKey("seqscan").AtMapKey("tps"),
					knownvalue.ListSizeExact(3)),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", cmp.AtMapKey("flame_graph"),
					knownvalue.StringExact("profiles/c2-seqscan-vs-index.svg")),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", cmp.AtMapKey("differed").AtSliceIndex(0).AtMapKey("name"),
					knownvalue.StringRegexp(regexp.MustCompile(`^(pg\.tup_returned|pg\.blks_hit)/tx$`))),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("summary_markdown"),
					knownvalue.StringRegexp(regexp.MustCompile(`(?s)## What differed.*## Profiles`))),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("local_files").AtMapKey("profiles/c2-index.pb.gz"),
					knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("local_report_dir"), knownvalue.StringFunc(func(d string) error {
					for _, f := range []string{"profiles/c2-index.pb.gz", "profiles/c2-seqscan.pb.gz", "profiles/c2-seqscan-vs-index.svg"} {
						if st, err := os.Stat(filepath.Join(d, f)); err != nil || st.Size() == 0 {
							return fmt.Errorf("collected %s: %v", f, err)
						}
					}
					return nil
				})),
			},
		}},
	})
}
