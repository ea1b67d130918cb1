provider "pgbench" {
  # Used by pgbench_host resources with an ec2 block.
  aws {
    region = "us-east-2"
  }

  # Also write every collected campaign to a PostgreSQL results database
  # (or set PGBENCH_HISTORY_DATABASE_URL):
  # history {
  #   database_url = var.results_database_url
  # }

  # Upload a runner you built yourself instead of the embedded one:
  # runner {
  #   path = "${path.module}/pgbench-runner-linux-amd64"
  # }
}
