package provider

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const nrHugepages = "/proc/sys/vm/nr_hugepages"

func readNrHugepages(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(nrHugepages)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// poolKernel takes the kernel lock, saves vm.nr_hugepages and returns its
// value and a CheckDestroy that fails unless destroy put it back.
func poolKernel(t *testing.T) (int64, resource.TestCheckFunc) {
	t.Helper()
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	prev := readNrHugepages(t)
	return prev, func(*terraform.State) error {
		if got := readNrHugepages(t); got != prev {
			return fmt.Errorf("vm.nr_hugepages after destroy = %d, want %d", got, prev)
		}
		return nil
	}
}

// checkNrHugepages checks the live pool after apply.
func checkNrHugepages(t *testing.T, want int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := readNrHugepages(t); got != want {
			return fmt.Errorf("vm.nr_hugepages = %d, want %d", got, want)
		}
		return nil
	}
}

func TestAccHugepagePoolPagesSSH(t *testing.T) {
	prev, checkDestroy := poolKernel(t)
	runner := installRunner(t)
	h := testhost.New(t)
	pages := prev + 64
	config := fmt.Sprintf(`
resource "pgbench_hugepage_pool" "test" {
  host_connection = {
    mode        = "ssh"
    host        = %q
    port        = %d
    user        = %q
    private_key = %q
    host_key    = %q
    runner_path = %q
  }
  pages = %d
}
`, h.Addr, h.Port, h.User, string(h.ClientKeyPEM), h.HostKeyLine, runner, pages)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkDestroy,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check:  checkNrHugepages(t, pages),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("pages_total"), knownvalue.Int64Exact(pages)),
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("previous_pages"), knownvalue.Int64Exact(prev)),
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("bytes"), knownvalue.Int64Exact(pages*2<<20)),
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("page_size"), knownvalue.StringExact("2MB")),
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("shared_memory_size_bytes"), knownvalue.Int64Exact(0)),
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccHugepagePoolMemoryFraction(t *testing.T) {
	_, checkDestroy := poolKernel(t)
	runner := installRunner(t)
	config := fmt.Sprintf(`
resource "pgbench_hugepage_pool" "test" {
  host_connection = %s
  memory_fraction = 0.01
}
`, localConnectionHCL(runner))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkDestroy,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						a := s.RootModule().Resources["pgbench_hugepage_pool.test"].Primary.Attributes
						total, _ := strconv.ParseInt(a["pages_total"], 10, 64)
						bytes, _ := strconv.ParseInt(a["bytes"], 10, 64)
						mem := memTotalBytes(t)
						// 1% of memory, rounded down to whole 2 MB pages.
						if want := int64(0.01*float64(mem)) / (2 << 20); total != want {
							return fmt.Errorf("pages_total = %d, want %d (1%% of %d bytes)", total, want, mem)
						}
						if bytes != total*(2<<20) {
							return fmt.Errorf("bytes = %d, want %d", bytes, total*(2<<20))
						}
						if got := readNrHugepages(t); got != total {
							return fmt.Errorf("vm.nr_hugepages = %d, want pages_total %d", got, total)
						}
						return nil
					},
				),
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccHugepagePoolSizeForPostgres(t *testing.T) {
	_, checkDestroy := poolKernel(t)
	bin := "/usr/lib/postgresql/15/bin"
	testhost.RequireCommand(t, "postgres", bin)
	runner := installRunner(t)
	config := fmt.Sprintf(`
resource "pgbench_hugepage_pool" "test" {
  host_connection = %s
  size_for {
    bin_dir  = %q
    settings = { shared_buffers = "64MB" }
  }
}
`, localConnectionHCL(runner), bin)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkDestroy,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(s *terraform.State) error {
					a := s.RootModule().Resources["pgbench_hugepage_pool.test"].Primary.Attributes
					total, _ := strconv.ParseInt(a["pages_total"], 10, 64)
					shm, _ := strconv.ParseInt(a["shared_memory_size_bytes"], 10, 64)
					// 64 MB of buffers plus the rest of the segment: more than
					// 32 pages, and the pool holds the whole segment.
					if shm <= 64<<20 || shm > 256<<20 {
						return fmt.Errorf("shared_memory_size_bytes = %d, want just above 64 MB", shm)
					}
					if total*(2<<20) < shm {
						return fmt.Errorf("pages_total %d (%d bytes) does not hold the %d-byte segment", total, total*(2<<20), shm)
					}
					if total > shm/(2<<20)+2 {
						return fmt.Errorf("pages_total = %d, want about %d", total, shm/(2<<20)+1)
					}
					if got := readNrHugepages(t); got != total {
						return fmt.Errorf("vm.nr_hugepages = %d, want pages_total %d", got, total)
					}
					return nil
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// A pool shrunk behind Terraform's back is planned for replacement, and the
// replacement reserves it again.
func TestAccHugepagePoolDrift(t *testing.T) {
	prev, checkDestroy := poolKernel(t)
	runner := installRunner(t)
	pages := prev + 32
	config := fmt.Sprintf(`
resource "pgbench_hugepage_pool" "test" {
  host_connection = %s
  pages      = %d
}
`, localConnectionHCL(runner), pages)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             checkDestroy,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check:  checkNrHugepages(t, pages),
			},
			{
				PreConfig: func() {
					if err := os.WriteFile(nrHugepages, []byte(strconv.FormatInt(pages-8, 10)), 0o644); err != nil {
						t.Fatalf("shrink pool: %v", err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_hugepage_pool.test", plancheck.ResourceActionReplace),
				}},
				Check: checkNrHugepages(t, pages),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("pages_total"), knownvalue.Int64Exact(pages)),
					// The replaced reservation was released first, back to
					// the original size, so that is what destroy restores.
					statecheck.ExpectKnownValue("pgbench_hugepage_pool.test", tfjsonpath.New("previous_pages"), knownvalue.Int64Exact(prev)),
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccHugepagePoolImpossible(t *testing.T) {
	prev, _ := poolKernel(t)
	runner := installRunner(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
resource "pgbench_hugepage_pool" "test" {
  host_connection = %s
  pages      = 100000000
}
`, localConnectionHCL(runner)),
				ExpectError: regexp.MustCompile(`(?s)Huge Page Reservation Failed.*100000000 pages.*was not changed`),
			},
		},
	})
	if got := readNrHugepages(t); got != prev {
		t.Errorf("vm.nr_hugepages after a failed reserve = %d, want %d", got, prev)
	}
}

func TestHugepagePoolValidation(t *testing.T) {
	conn := `host_connection = { mode = "local", runner_path = "/nonexistent/pgbench-runner" }`
	tests := []struct {
		name, body string
		want       string
	}{
		{"fraction zero", "memory_fraction = 0", `(?s)Invalid Memory Fraction.*memory_fraction is 0;`},
		{"fraction too big", "memory_fraction = 0.95", `(?s)Invalid Memory Fraction.*memory_fraction is 0.95;.*at most 0.9`},
		// At the attribute: Terraform quotes its line.
		{"pages and fraction", "pages = 10\n  memory_fraction = 0.1", `(?s)Invalid Pool Size.*line \d+.*memory_fraction = 0.1.*exactly one of pages, memory_fraction.*2 are set`},
		{"nothing", "", `(?s)Invalid Pool Size.*0 are set`},
		{"bad page size", "pages = 10\n  page_size = \"4MB\"", `(?s)page_size.*value must be one of`},
		{"zero pages", "pages = 0", `(?s)Invalid Page Count.*pages is 0`},
		{"size_for without bin_dir", "size_for {\n    settings = { shared_buffers = \"1GB\" }\n  }", `(?s)Missing PostgreSQL Bin Directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      fmt.Sprintf("resource \"pgbench_hugepage_pool\" \"test\" {\n  %s\n  %s\n}\n", conn, tt.body),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tt.want),
				}},
			})
		})
	}
}

func memTotalBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}
