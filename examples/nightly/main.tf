# Nightly: PostgreSQL master against the last release on one EC2 metal
# host, written to a shared PostgreSQL results database, with the change
# points of every series read back. The workflow in workflow.yml applies
# this every night and, when a new change point shows a regression, runs
# bisect/ between that night's commit and the night before's.
#
#   export PGBENCH_HISTORY_DATABASE_URL=postgres://bench:...@results.example:5432/pgbench
#   terraform apply -var 'ssh_cidrs=["203.0.113.7/32"]' -var master_commit=$(git ls-remote $REPO master | cut -f1)

terraform {
  required_version = ">= 1.5"
  required_providers {
    pgbench = {
      source = "pgbench-tf/pgbench"
    }
  }
}

variable "region" {
  description = "AWS region."
  type        = string
  default     = "us-east-2"
}

variable "instance_type" {
  description = "Instance type: one class every night, so the nights form one series."
  type        = string
  default     = "m6i.metal"
}

variable "ssh_cidrs" {
  description = "Where the CI runner connects from (the workflow looks up its own address)."
  type        = list(string)
}

variable "git_url" {
  description = "PostgreSQL repository."
  type        = string
  default     = "https://git.postgresql.org/git/postgresql.git"
}

variable "master_commit" {
  description = "The commit of master tonight (resolved by the workflow, so the build and the record name one commit)."
  type        = string
  validation {
    condition     = can(regex("^[0-9a-f]{40}$", var.master_commit))
    error_message = "master_commit must be a full commit hash."
  }
}

variable "release_ref" {
  description = "The last release, the fixed baseline every night is compared with: host drift cancels in the paired delta."
  type        = string
  default     = "REL_17_2"
}

variable "clients" {
  description = "Client counts, one series each."
  type        = list(number)
  default     = [1, 32, 128]
}

# The results database comes from PGBENCH_HISTORY_DATABASE_URL (a secret in
# the workflow); the block may also set database_url.
provider "pgbench" {
  aws {
    region = var.region
  }
  history {}
}

resource "pgbench_host" "nightly" {
  ec2 {
    instance_type = var.instance_type
    image {
      name   = "debian-12-amd64-*"
      owners = ["136693071363"]
    }
    ssh_cidrs    = var.ssh_cidrs
    max_lifetime = "6h"
    tags = {
      project = "pgbench-nightly"
    }
  }
  bootstrap {
    packages = ["numactl"]
  }
  tuning {
    numa_balancing = "off"
    cpu_governor   = "performance"
  }
}

resource "pgbench_postgres_build" "variant" {
  for_each = {
    release = var.release_ref
    master  = var.master_commit
  }
  host_connection = pgbench_host.nightly.connection_info
  source {
    git = var.git_url
    ref = each.value
  }
  configure_flags = ["--without-icu"]
  install_deps    = true
  timeouts {
    create = "60m"
  }
}

resource "pgbench_ab_benchmark" "nightly" {
  host_connection = pgbench_host.nightly.connection_info
  settings = {
    shared_buffers  = "8GB"
    max_connections = tostring(max(var.clients...) + 20)
  }
  variant {
    name    = "release"
    bin_dir = pgbench_postgres_build.variant["release"].bin_dir
  }
  variant {
    name    = "master"
    bin_dir = pgbench_postgres_build.variant["master"].bin_dir
  }
  workload {
    mode       = "select-only"
    scale      = 100
    clients    = var.clients
    duration   = "60s"
    iterations = "10"
  }
  server_numa = "cpunodebind=0,membind=0"
  client_numa = "cpunodebind=1,membind=1"
  timeouts {
    create = "3h"
  }
}

# Read after tonight's campaign is written to the database.
data "pgbench_history" "nightly" {
  baseline   = "release"
  candidate  = "master"
  depends_on = [pgbench_ab_benchmark.nightly]
}

locals {
  # A change point is reported once three nights confirm it: a change first
  # seen tonight sits three points from the end of its series.
  new_regressions = flatten([
    for s in data.pgbench_history.nightly.series : [
      for c in s.changes : {
        clients    = s.clients
        campaign   = c.campaign
        night      = c.recorded_at
        before_pct = c.before_pct
        after_pct  = c.after_pct
        p_value    = c.p_value
      } if c.index == s.points - 3 && c.after_pct < c.before_pct
    ]
  ])
}

check "no_new_regression" {
  assert {
    condition     = length(local.new_regressions) == 0
    error_message = "master's delta against the release dropped: ${jsonencode(local.new_regressions)}"
  }
}

output "campaign" {
  description = "Tonight's campaign id; the workflow records it with master_commit."
  value       = pgbench_ab_benchmark.nightly.id
}

output "new_regressions" {
  description = "Change points first seen tonight where master got slower; the bisect job starts from the first."
  value       = local.new_regressions
}
