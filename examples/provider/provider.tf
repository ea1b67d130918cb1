provider "pgbench" {
  # Used by pgbench_host resources with an ec2 block.
  aws {
    region = "us-east-2"
  }

  # Upload a runner you built yourself instead of the embedded one:
  # runner {
  #   path = "${path.module}/pgbench-runner-linux-amd64"
  # }
}
