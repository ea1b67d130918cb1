provider "pgbench" {
  # Used by pgbench_host resources with an ec2 block.
  aws {
    region = "us-east-2"

    # Refuse credentials of any other account before anything is made.
    allowed_account_ids = ["123456789012"]

    # On every instance and its volumes, under each host's own ec2.tags.
    default_tags = {
      team        = "postgres-perf"
      cost-center = "benchmarks"
    }
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
