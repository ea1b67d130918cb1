package provider

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TestAccEmbeddedRunner checks that `make test` (which runs `make runner`
// first) tests a provider carrying the runner for this machine, and that the
// data source reports the embedded bytes.
func TestAccEmbeddedRunner(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "internal", "runnerbin", "bin", runnerbin.Name(runtime.GOARCH)))
	if err != nil {
		testhost.Skip(t, "no runner built into internal/runnerbin/bin (run `make runner` first): %v", err)
		return
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `data "pgbench_runner" "this" { architecture = "` + runtime.GOARCH + `" }`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("source"), knownvalue.StringExact("embedded")),
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("sha256"), knownvalue.StringExact(digest.SHA256(want))),
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("embedded_architectures"),
						knownvalue.ListPartial(map[int]knownvalue.Check{0: knownvalue.NotNull()})),
				},
			},
		},
	})
}
