package provider

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// protoV6ProviderFactories runs the provider in-process for acceptance tests.
var protoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"pgbench": providerserver.NewProtocol6WithError(New("test")()),
}

// preCheck fails acceptance tests that cannot find terraform instead of
// letting them pass by skipping: .ci/run sets TF_ACC and the path.
func preCheck(t *testing.T) {
	t.Helper()
	p := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if p == "" {
		var err error
		if p, err = exec.LookPath("terraform"); err != nil {
			t.Fatalf("TF_ACC is set but terraform is not installed and TF_ACC_TERRAFORM_PATH is empty")
		}
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("terraform at %s: %v", p, err)
	}
}

func TestAccProviderEmptyConfig(t *testing.T) {
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
provider "pgbench" {
  aws {
    region = "us-east-2"
  }
}
`,
				PlanOnly: true,
			},
		},
	})
}

func TestAccRunnerDataSourceFromPath(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pgbench-runner")
	content := []byte("#!/bin/sh\necho fake runner for checksum\n")
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
provider "pgbench" {
  runner {
    path = "` + bin + `"
  }
}

data "pgbench_runner" "this" {
  architecture = "aarch64"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("source"), knownvalue.StringExact(bin)),
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("sha256"), knownvalue.StringExact(digest.SHA256(content))),
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("size_bytes"), knownvalue.Int64Exact(int64(len(content)))),
					statecheck.ExpectKnownValue("data.pgbench_runner.this", tfjsonpath.New("provider_version"), knownvalue.StringExact("test")),
				},
			},
		},
	})
}

func TestAccRunnerPathMissing(t *testing.T) {
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
provider "pgbench" {
  runner {
    path = "/nonexistent/pgbench-runner"
  }
}

data "pgbench_runner" "this" {}
`,
				ExpectError: regexp.MustCompile(`Runner Binary Not Found`),
			},
		},
	})
}

func TestAccRunnerDataSourceBadArchitecture(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      `data "pgbench_runner" "this" { architecture = "sparc64" }`,
				ExpectError: regexp.MustCompile(`value must be one of`),
			},
		},
	})
}
