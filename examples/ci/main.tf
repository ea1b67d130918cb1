# Stock vs patched PostgreSQL on an EC2 metal instance, from a CI job: the
# workflow in workflow.yml applies this, uploads the collected reports,
# fails when a comparison is significantly slower, and always destroys.
#
#   terraform apply -var 'ssh_cidrs=["203.0.113.7/32"]' \
#     -var 'patch_files=["../../patches/0001-my-change.patch"]'
#
# The instance terminates itself after max_lifetime even when the job dies
# before its destroy step.

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
  description = "Instance type. Metal: no neighbours share the CPUs, caches or memory bandwidth with the benchmark."
  type        = string
  default     = "m6i.metal"
}

variable "availability_zones" {
  description = "Zones to try in order when one has no metal capacity."
  type        = list(string)
  default     = ["us-east-2a", "us-east-2b", "us-east-2c"]
}

variable "ssh_cidrs" {
  description = "Where the CI runner connects from, e.g. [\"203.0.113.7/32\"] (the workflow looks up its own address)."
  type        = list(string)
}

variable "max_lifetime" {
  description = "Dead-man switch: the instance terminates itself this long after boot. Longer than the job's timeout."
  type        = string
  default     = "7h"
}

variable "postgres_tarball" {
  description = "PostgreSQL release tarball both builds start from."
  type        = string
  default     = "https://ftp.postgresql.org/pub/source/v17.2/postgresql-17.2.tar.bz2"
}

variable "postgres_sha256" {
  description = "sha256 of the tarball (its .sha256 file on ftp.postgresql.org)."
  type        = string
  default     = null
}

variable "patch_files" {
  description = "Patches applied to the patched build, in order."
  type        = list(string)
  default     = []
}

variable "clients" {
  description = "Client counts, one cell each."
  type        = list(number)
  default     = [1, 32, 128]
}

variable "duration" {
  description = "Length of each measured run."
  type        = string
  default     = "60s"
}

variable "iterations" {
  description = "Runs per variant and client count, or \"auto\" for as many as a ±1% interval needs."
  type        = string
  default     = "10"
}

provider "pgbench" {
  aws {
    region = var.region
  }
}

locals {
  settings = {
    shared_buffers  = "8GB"
    max_connections = tostring(max(var.clients...) + 20)
  }
}

resource "pgbench_host" "ci" {
  ec2 {
    instance_type = var.instance_type
    image {
      name   = "debian-12-amd64-*"
      owners = ["136693071363"]
    }
    availability_zones = var.availability_zones
    ssh_cidrs          = var.ssh_cidrs
    max_lifetime       = var.max_lifetime
    tags = {
      project = "pgbench-ci"
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

# Stock and patched from the same tarball; only the patches differ.
resource "pgbench_postgres_build" "variant" {
  for_each = {
    stock   = []
    patched = var.patch_files
  }
  host_connection = pgbench_host.ci.connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  patches      = [for f in each.value : file(f)]
  install_deps = true

  timeouts {
    create = "60m"
  }
}

resource "pgbench_ab_benchmark" "ab" {
  host_connection  = pgbench_host.ci.connection_info
  settings         = local.settings
  hourly_price_usd = pgbench_host.ci.ec2.hourly_price_usd

  variant {
    name    = "stock"
    bin_dir = pgbench_postgres_build.variant["stock"].bin_dir
  }
  variant {
    name    = "patched"
    bin_dir = pgbench_postgres_build.variant["patched"].bin_dir
  }

  workload {
    mode       = "select-only"
    scale      = 100
    clients    = var.clients
    duration   = var.duration
    iterations = var.iterations
  }

  server_numa = "cpunodebind=0,membind=0"
  client_numa = "cpunodebind=1,membind=1"
  order       = "alternate"

  # Host, builds (60m) and campaign together stay inside the workflow's
  # 300-minute apply step, so Terraform's own timeout, not the step's
  # kill, ends a campaign that runs long.
  timeouts {
    create = "3h30m"
  }
}

output "comparisons" {
  description = "Every comparison of the campaign: the workflow fails the job when one has verdict slower."
  value = flatten([
    for cell in pgbench_ab_benchmark.ab.results : [
      for c in cell.comparisons : {
        clients     = cell.clients
        baseline    = c.baseline
        candidate   = c.candidate
        delta_pct   = c.delta_pct
        ci_low_pct  = c.ci_low_pct
        ci_high_pct = c.ci_high_pct
        p_adjusted  = c.p_adjusted
        verdict     = c.verdict
      }
    ]
  ])
}

output "summary" {
  description = "The campaign's Markdown summary; the workflow puts it on the job's summary page."
  value       = pgbench_ab_benchmark.ab.summary_markdown
}

output "cost_usd" {
  description = "What the campaign cost at the instance's hourly price."
  value       = pgbench_ab_benchmark.ab.cost_usd
}
