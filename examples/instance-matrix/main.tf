# One A/B campaign per instance type, all at once: when one box is not
# enough to tell whether a patch helps everywhere, run the same stock vs
# patched campaign on several instance types in parallel (for_each), each
# on its own instance, and read one table at the end.
#
#   terraform apply -var 'ssh_cidrs=["203.0.113.7/32"]' -var postgres_sha256=... \
#     -var 'patch_files=["v3-0001-clock-sweep.patch"]'
#
# Every instance is launched with the same guarantees as a single one: the
# dead-man switch (it powers itself off, and so terminates, after
# max_lifetime) and `terraform destroy`, which terminates them all and waits
# until EC2 reports each one terminated. Mind the vCPU quota: the types'
# vCPUs add up (m6i.metal 128 + r8i.metal-96xl 384 = 512).

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

variable "aws_endpoint" {
  description = "EC2 endpoint override (a VPC endpoint, or a test server)."
  type        = string
  default     = null
}

variable "aws_servicequotas_endpoint" {
  description = "Service Quotas endpoint override (a VPC endpoint, or a test server), where the vCPU quota is read."
  type        = string
  default     = null
}

variable "instance_types" {
  description = "Instance types to compare the variants on, one instance each."
  type        = set(string)
  default     = ["m6i.metal", "r8i.metal-96xl"]
}

variable "availability_zones" {
  description = "Zones to try in order when one has no metal capacity."
  type        = list(string)
  default     = ["us-east-2a", "us-east-2b", "us-east-2c"]
}

variable "image_name" {
  description = "AMI name filter; the newest match is launched."
  type        = string
  default     = "debian-12-amd64-*"
}

variable "image_owner" {
  description = "AMI owner (136693071363 is Debian)."
  type        = string
  default     = "136693071363"
}

variable "ssh_cidrs" {
  description = "Where Terraform connects from, e.g. [\"203.0.113.7/32\"]."
  type        = list(string)
}

variable "max_lifetime" {
  description = "Dead-man switch: each instance terminates itself this long after boot."
  type        = string
  default     = "8h"
}

variable "poll_interval" {
  description = "How often to look at the instances' states while they boot or terminate."
  type        = string
  default     = "15s"
}

variable "install_dir" {
  description = "Where pgbench-runner goes; each instance type gets its own directory below it."
  type        = string
  default     = "/usr/local/lib/pgbench"
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

variable "system_bin_dir" {
  description = "Use this installed PostgreSQL for both variants instead of building (a dry run of the pipeline)."
  type        = string
  default     = null
}

variable "shared_buffers" {
  description = "shared_buffers of both variants."
  type        = string
  default     = "32GB"
}

variable "scale" {
  description = "pgbench scale factor: 3000 is about 45 GB."
  type        = number
  default     = 3000
}

variable "clients" {
  description = "Client counts, one cell each."
  type        = list(number)
  default     = [64, 128, 256]
}

variable "duration" {
  description = "Length of each measured run."
  type        = string
  default     = "300s"
}

variable "warmup" {
  description = "Unmeasured run after each server start."
  type        = string
  default     = "30s"
}

variable "iterations" {
  description = "Runs per variant and client count."
  type        = number
  default     = 5
}

provider "pgbench" {
  aws {
    region                 = var.region
    endpoint               = var.aws_endpoint
    servicequotas_endpoint = var.aws_servicequotas_endpoint
  }
}

locals {
  build = var.system_bin_dir == null
  settings = {
    shared_buffers  = var.shared_buffers
    max_connections = tostring(max(var.clients...) + 20)
  }
}

resource "pgbench_host" "box" {
  for_each = var.instance_types

  # Each instance has its own disk; a directory per type also keeps apart
  # rehearsals that put several "instances" on one machine.
  install_dir = "${var.install_dir}/${each.key}"

  ec2 {
    instance_type = each.key
    image {
      name   = var.image_name
      owners = [var.image_owner]
    }
    availability_zones = var.availability_zones
    ssh_cidrs          = var.ssh_cidrs
    max_lifetime       = var.max_lifetime
    poll_interval      = var.poll_interval
    tags = {
      project = "instance-matrix"
    }
    root_volume {
      size_gb = 2000
      type    = "gp3"
    }
  }

  bootstrap {
    packages = ["numactl"]
  }

  tuning {
    numa_balancing = "off"
  }
}

resource "pgbench_postgres_build" "stock" {
  for_each        = local.build ? var.instance_types : toset([])
  host_connection = pgbench_host.box[each.key].connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  configure_flags = ["--with-libnuma"]
  install_deps    = true

  timeouts {
    create = "90m"
  }
}

resource "pgbench_postgres_build" "patched" {
  for_each        = local.build ? var.instance_types : toset([])
  host_connection = pgbench_host.box[each.key].connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  patches         = [for f in var.patch_files : file(f)]
  configure_flags = ["--with-libnuma"]
  install_deps    = true

  timeouts {
    create = "90m"
  }
}

# A dry run: the installed PostgreSQL plays both variants.
resource "pgbench_postgres_build" "system" {
  for_each        = local.build ? toset([]) : var.instance_types
  host_connection = pgbench_host.box[each.key].connection_info
  source {
    system = var.system_bin_dir
  }
}

resource "pgbench_ab_benchmark" "matrix" {
  for_each         = var.instance_types
  host_connection  = pgbench_host.box[each.key].connection_info
  settings         = local.settings
  hourly_price_usd = pgbench_host.box[each.key].ec2.hourly_price_usd

  variant {
    name    = "stock"
    bin_dir = local.build ? pgbench_postgres_build.stock[each.key].bin_dir : pgbench_postgres_build.system[each.key].bin_dir
  }
  variant {
    name    = "patched"
    bin_dir = local.build ? pgbench_postgres_build.patched[each.key].bin_dir : pgbench_postgres_build.system[each.key].bin_dir
  }

  workload {
    mode       = "select-only"
    scale      = var.scale
    clients    = var.clients
    duration   = var.duration
    warmup     = var.warmup
    iterations = var.iterations
  }

  order = "alternate"

  timeouts {
    create = "8h"
  }
}

locals {
  rows = flatten([
    for type, campaign in pgbench_ab_benchmark.matrix : [
      for cell in campaign.results : format("| %s | %d | %.0f | %.0f | %+.1f | %s | %s |",
        type, cell.clients,
        cell.variants["stock"].median_tps, cell.variants["patched"].median_tps,
        cell.comparisons[0].delta_pct,
        # Too few iterations leave the interval unknown (null).
        try(format("%+.1f to %+.1f", cell.comparisons[0].ci_low_pct, cell.comparisons[0].ci_high_pct), "n/a"),
      cell.comparisons[0].verdict)
    ]
  ])
}

output "comparison" {
  description = "Patched against stock, one row per instance type and client count (median TPS, the delta and its interval, the verdict)."
  value = join("\n", concat([
    "| instance type | clients | stock TPS | patched TPS | delta % | interval % | verdict |",
    "|---|---:|---:|---:|---:|---|---|",
  ], local.rows))
}

output "instances" {
  description = "Each type's instance, zone, price and when its dead-man switch fires."
  value = {
    for type, host in pgbench_host.box : type => {
      id               = host.ec2.instance_id
      zone             = host.ec2.availability_zone
      hourly_price_usd = host.ec2.hourly_price_usd
      expires_at       = host.ec2.expires_at
      cpus             = host.cpus
    }
  }
}

output "cost_usd" {
  description = "What the campaigns cost at their instances' hourly prices."
  value       = format("%.2f", sum([for c in pgbench_ab_benchmark.matrix : c.cost_usd]))
}
