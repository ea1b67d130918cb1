# The nightly workflow's second job: find the commit between two nights
# that made master slower, on the same class of host.
#
#   terraform apply -var 'ssh_cidrs=["203.0.113.7/32"]' -var good=<commit> -var bad=<commit> -var clients=32

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
  description = "The nightly job's instance type."
  type        = string
  default     = "m6i.metal"
}

variable "ssh_cidrs" {
  description = "Where the CI runner connects from."
  type        = list(string)
}

variable "git_url" {
  description = "PostgreSQL repository."
  type        = string
  default     = "https://git.postgresql.org/git/postgresql.git"
}

variable "good" {
  description = "master's commit on the night before the change."
  type        = string
}

variable "bad" {
  description = "master's commit on the first night after the change."
  type        = string
}

variable "clients" {
  description = "The client count of the series that changed."
  type        = number
}

provider "pgbench" {
  aws {
    region = var.region
  }
}

resource "pgbench_host" "bisect" {
  ec2 {
    instance_type = var.instance_type
    image {
      name   = "debian-12-amd64-*"
      owners = ["136693071363"]
    }
    ssh_cidrs    = var.ssh_cidrs
    max_lifetime = "12h"
    tags = {
      project = "pgbench-nightly-bisect"
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

resource "pgbench_perf_bisect" "night" {
  host_connection = pgbench_host.bisect.connection_info
  git_url         = var.git_url
  good            = var.good
  bad             = var.bad
  direction       = "regression"
  configure_flags = ["--without-icu"]
  install_deps    = true
  settings = {
    shared_buffers  = "8GB"
    max_connections = tostring(var.clients + 20)
  }
  workload {
    mode       = "select-only"
    scale      = 100
    clients    = [var.clients]
    duration   = "30s"
    iterations = 5
  }
  server_numa = "cpunodebind=0,membind=0"
  client_numa = "cpunodebind=1,membind=1"
  timeouts {
    create = "10h"
  }
}

output "first_bad_commit" {
  value = pgbench_perf_bisect.night.first_bad_commit
}

output "summary" {
  value = pgbench_perf_bisect.night.summary_markdown
}
