package provider

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccEC2ExampleNumaClockSweep applies examples/numa-clock-sweep as it
// is against the simulated region, with the scale, durations, pool and
// builds turned down (the installed PostgreSQL for both variants), so the
// example is known to work; destroy terminates the instance.
func TestAccEC2ExampleNumaClockSweep(t *testing.T) {
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	testhost.LockKernel(t)
	sim := ec2TestRegion(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	// Destroy terminates instead of reverting; the simulated instances
	// share this kernel.
	testhost.SaveSysctl(t, "kernel.numa_balancing")
	// The example names its provider by its registry address.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "pgbench-tf")
	vars := config.Variables{
		"aws_endpoint":               config.StringVariable(sim.URL),
		"aws_servicequotas_endpoint": config.StringVariable(sim.URL),
		"ssh_cidrs":                  config.ListVariable(config.StringVariable("10.200.0.0/16")),
		"install_dir":                config.StringVariable(reachableTempDir(t)),
		"poll_interval":              config.StringVariable("100ms"),
		"system_bin_dir":             config.StringVariable(systemPGBin),
		"hugepages":                  config.IntegerVariable(48),
		"shared_buffers":             config.StringVariable("32MB"),
		"scale":                      config.IntegerVariable(1),
		"clients":                    config.ListVariable(config.IntegerVariable(1), config.IntegerVariable(2)),
		"duration":                   config.StringVariable("1s"),
		"warmup":                     config.StringVariable("1s"),
		"iterations":                 config.StringVariable("2"),
		"tpcc_warehouses":            config.IntegerVariable(1),
		"tpcc_clients":               config.ListVariable(config.IntegerVariable(1), config.IntegerVariable(2)),
		"tpcc_warmup":                config.StringVariable("1s"),
	}
	// The example leaves local_dir at its default: the reports come home,
	// over SSH, into pgbench-results/<id> in the working directory.
	results := abResultsRootForTest(t)
	var readOnly, readWrite string
	resource.Test(t, resource.TestCase{
		PreCheck:     func() { preCheck(t) },
		CheckDestroy: ec2NoneRunning(sim),
		Steps: []resource.TestStep{{
			// The example has its own provider block: the factories
			// belong to the step then.
			ProtoV6ProviderFactories: protoV6ProviderFactories,
			ConfigDirectory:          config.StaticDirectory("../examples/numa-clock-sweep"),
			ConfigVariables:          vars,
			ConfigStateChecks: slices.Concat(
				abResultsChecks("pgbench_ab_benchmark.read_only", []string{"stock", "patched"}, []int{1, 2}, 2, new(string)),
				abResultsChecks("pgbench_ab_benchmark.read_write", []string{"stock", "patched"}, []int{1, 2}, 2, new(string)),
				abResultsChecks("pgbench_ab_benchmark.tpcc", []string{"stock", "patched"}, []int{1, 2}, 2, new(string)),
				// read_only profiles one extra run per variant and client
				// count: 8 measured, 4 profiled.
				abCollectedChecks("pgbench_ab_benchmark.read_only", 12, 12, "", &readOnly),
				abCollectedChecks("pgbench_ab_benchmark.read_write", 8, 8, "", &readWrite),
				abCollectedChecks("pgbench_ab_benchmark.tpcc", 8, 8, "", new(string)),
				[]statecheck.StateCheck{
					// The flame graph of each client count came home.
					statecheck.ExpectKnownOutputValue("read_only_flame_graphs", knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringFunc(fileNotEmpty), knownvalue.StringFunc(fileNotEmpty),
					})),
					abUnder("pgbench_ab_benchmark.read_only", results),
					abUnder("pgbench_ab_benchmark.read_write", results),
					abUnder("pgbench_ab_benchmark.tpcc", results),
				}),
			Check: resource.ComposeTestCheckFunc(
				ec2Only(sim, 1, nil),
				resource.TestCheckResourceAttr("pgbench_host.metal", "ec2.hourly_price_usd", "14.45"),
				resource.TestCheckResourceAttr("pgbench_host.metal", "ec2.availability_zone", "us-east-2a"),
				tpccResultsCheck("pgbench_ab_benchmark.tpcc", []string{"stock", "patched"}, 2, 2),
				func(s *terraform.State) error {
					for _, name := range []string{"pgbench_ab_benchmark.read_only", "pgbench_ab_benchmark.read_write", "pgbench_ab_benchmark.tpcc"} {
						a := s.RootModule().Resources[name].Primary.Attributes
						var cost, wall float64
						if _, err := fmt.Sscan(a["cost_usd"], &cost); err != nil {
							return fmt.Errorf("%s cost_usd = %q: %v", name, a["cost_usd"], err)
						}
						fmt.Sscan(a["wall_seconds"], &wall)
						if want := 14.45 * wall / 3600; cost <= 0 || cost < want*0.999 || cost > want*1.001 {
							return fmt.Errorf("%s cost_usd = %v, want %v (%v s at 14.45/h)", name, cost, want, wall)
						}
					}
					return nil
				},
			),
		}},
	})
}

// tpccResultsCheck checks a TPC-C campaign's results: every cell's
// variants have one NOPM per iteration, a median NOPM and a median TPM
// above it (TPM counts every transaction type, NOPM only new orders).
func tpccResultsCheck(name string, variants []string, cells, iterations int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		a := s.RootModule().Resources[name].Primary.Attributes
		for c := range cells {
			for _, v := range variants {
				at := fmt.Sprintf("results.%d.variants.%s.", c, v)
				var nopm, tpm float64
				fmt.Sscan(a[at+"median_nopm"], &nopm)
				fmt.Sscan(a[at+"median_tpm"], &tpm)
				if !(nopm > 0 && tpm > nopm) || a[at+"nopm.#"] != fmt.Sprint(iterations) {
					return fmt.Errorf("%s %s: median_nopm %q, median_tpm %q, %s NOPM values; want %d, 0 < NOPM < TPM",
						name, at, a[at+"median_nopm"], a[at+"median_tpm"], a[at+"nopm.#"], iterations)
				}
			}
		}
		return nil
	}
}

// fileNotEmpty checks that path is a file with something in it.
func fileNotEmpty(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return fmt.Errorf("%s is empty", path)
	}
	return nil
}
