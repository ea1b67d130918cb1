// Command terraform-provider-pgbench serves the pgbench Terraform provider.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/pgbench-tf/terraform-provider-pgbench/provider"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Address is where Terraform finds the provider.
const address = "registry.terraform.io/pgbench-tf/pgbench"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: address,
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
