# Terminate the expired orphans of lost state files (instances tagged
# managed-by = pgbench whose expires-at has passed), once a day: the
# trigger changes daily, which replaces the resource and sweeps again.
resource "pgbench_ec2_sweep" "daily" {
  region = "us-east-2"
  triggers = {
    day = formatdate("YYYY-MM-DD", plantimestamp())
  }
}

output "swept" {
  value = pgbench_ec2_sweep.daily.terminated_instance_ids
}
