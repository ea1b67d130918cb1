# What the provider would upload to an x86_64 host.
data "pgbench_runner" "x86" {
  architecture = "x86_64"
}

output "runner_sha256" {
  value = data.pgbench_runner.x86.sha256
}
