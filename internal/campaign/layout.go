package campaign

import "path"

// Where campaigns live on a host: one directory per campaign, named by its
// key, under the directory pgbench_host installed the runner into. Paths
// are slash-separated because they name places on the (Linux) host, not on
// the machine running Terraform.

// Root is the directory holding every campaign directory of an install
// directory.
func Root(installDir string) string { return path.Join(installDir, "campaigns") }

// Dir is the directory of the campaign with key under an install directory.
func Dir(installDir, key string) string { return path.Join(Root(installDir), key) }
