# The NUMA clock-sweep runbook as Terraform: stock vs patched PostgreSQL on a
# bare-metal r8i.metal-96xl in us-east-2 (2 TB gp3), NUMA balancing off, the
# performance governor, both builds --with-libnuma, a 17408-page huge-page
# pool, shared_buffers 32GB against a `pgbench -i -s 3000` dataset (about
# 45 GB, so the clock sweep has to evict), read-only and read-write at
# several client counts, the server pinned to NUMA node 0; then TPC-C (the
# runbook's HammerDB step, "no regression"): 1000 warehouses at 64 to 256
# virtual users, checked on NOPM. The runbook's 3 iterations per client
# count are the paired test's minimum and detect only large changes; this
# example runs iterations = "auto": 6 pairs per client count, then as many
# as an interval of +-1% needs, at most 10.
#
# Metal time (r8i.metal-96xl, about $14.45/h): with these defaults expect
# 13 to 21 hours of measurement (12 to 20 runs of 5 minutes per client
# count in each of the three campaigns, plus warm-ups and one profiled run
# per variant and client count), 15 to 23 hours in all with the builds and
# the loads: $215 to $330. A quiet host stops most client counts at 6
# pairs, the low end. -var iterations=3 is the runbook's smoke run, about
# 9 hours ($130), with a minimum detectable effect several times larger.
#
#   terraform apply -var 'ssh_cidrs=["203.0.113.7/32"]' -var postgres_sha256=... \
#     -var 'patch_files=["v3-0001-clock-sweep.patch"]'
#
# `terraform destroy` terminates the instance and waits until EC2 reports it
# terminated. Should Terraform never come back, the instance powers itself
# off (and so terminates) after max_lifetime.

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

variable "instance_type" {
  description = "Instance type: r8i.metal-96xl for the real run, m6i.metal for a cheaper rehearsal."
  type        = string
  default     = "r8i.metal-96xl"
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
  description = "Where Terraform connects from, e.g. [\"203.0.113.7/32\"]: a temporary security group admits SSH from there."
  type        = list(string)
}

variable "ssh_user" {
  description = "User to log in as. Default (null): the image's own login user, admin on Debian; it has passwordless sudo, which tuning and packages use."
  type        = string
  default     = null
}

variable "max_lifetime" {
  description = "Dead-man switch: the instance terminates itself this long after boot. The default covers the longest apply of the defaults (about 23 hours with every client count at max_iterations)."
  type        = string
  default     = "26h"
}

variable "poll_interval" {
  description = "How often to look at the instance's state while it boots or terminates."
  type        = string
  default     = "15s"
}

variable "install_dir" {
  description = "Where pgbench-runner goes on the instance."
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

variable "hugepages" {
  description = "Huge pages (2 MB) to reserve: 17408 holds shared_buffers = 32GB."
  type        = number
  default     = 17408
}

variable "shared_buffers" {
  description = "Smaller than the dataset, so the clock sweep has to evict."
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
  default     = [64, 128, 256, 384]
}

variable "duration" {
  description = "Length of each measured run."
  type        = string
  default     = "300s"
}

variable "warmup" {
  description = "Unmeasured run after each server start, before its first measured run."
  type        = string
  default     = "30s"
}

variable "iterations" {
  description = "Runs per variant and client count, or \"auto\": min_iterations pairs first, then as many as an interval of the delta of +-1% needs, at most max_iterations."
  type        = string
  default     = "auto"
}

variable "min_iterations" {
  description = "With iterations = \"auto\": the pairs each client count runs before it estimates how many it needs."
  type        = number
  default     = 6
}

variable "max_iterations" {
  description = "With iterations = \"auto\": the most pairs a client count runs, which bounds the metal time."
  type        = number
  default     = 10
}

variable "profile" {
  description = "perf profiles of the read-only campaign: one-per-cell adds one profiled run per variant and client count (kept out of the statistics) and a differential flame graph of patched against stock; none to skip them."
  type        = string
  default     = "one-per-cell"
}

variable "tpcc_warehouses" {
  description = "TPC-C warehouses: 1000 is about 100 GB, three times shared_buffers (so the clock sweep still evicts, but writes dominate), and four per virtual user at 256, as HammerDB advises, so new orders rarely queue on a district."
  type        = number
  default     = 1000
}

variable "tpcc_clients" {
  description = "TPC-C virtual users, one cell each; each has a home warehouse in turn."
  type        = list(number)
  default     = [64, 128, 256]
}

variable "tpcc_warmup" {
  description = "TPC-C ramp-up after each server start (HammerDB's default is 2 minutes)."
  type        = string
  default     = "120s"
}

variable "server_numa" {
  description = "numactl placement of the postmaster: node 0, as the runbook insists."
  type        = string
  default     = "cpunodebind=0,membind=0"
}

variable "client_instance_type" {
  description = "EC2 instance type of an optional client host that runs every pgbench over the network, so the metal host's CPUs, caches and memory bandwidth serve PostgreSQL alone (null: pgbench runs on the metal host). See the guide for when to use it."
  type        = string
  default     = null
}

variable "placement_group_name" {
  description = "Name of the cluster placement group the metal host and the client host launch into (only with client_instance_type); unique in the account and region."
  type        = string
  default     = "pgbench-numa-clock-sweep"
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
    max_connections = tostring(max(concat(var.clients, var.tpcc_clients)...) + 20)
  }
}

# With a client host, both instances launch into one cluster placement
# group: one zone, the shortest and fastest network path EC2 offers
# between the server and the client.
resource "pgbench_placement_group" "cluster" {
  count = var.client_instance_type == null ? 0 : 1
  name  = var.placement_group_name
}

resource "pgbench_host" "metal" {
  install_dir = var.install_dir

  ec2 {
    instance_type = var.instance_type
    image {
      name   = var.image_name
      owners = [var.image_owner]
    }
    availability_zones = var.availability_zones
    placement_group    = var.client_instance_type == null ? null : pgbench_placement_group.cluster[0].name
    ssh_cidrs          = var.ssh_cidrs
    ssh_user           = var.ssh_user
    max_lifetime       = var.max_lifetime
    poll_interval      = var.poll_interval
    tags = {
      project = "numa-clock-sweep"
    }
    root_volume {
      size_gb    = 2000
      type       = "gp3"
      iops       = 16000
      throughput = 1000
    }
  }

  bootstrap {
    packages = ["numactl", "linux-perf"]
  }

  tuning {
    numa_balancing = "off"
    cpu_governor   = "performance"
  }
}

# Stock and patched from the same release tarball, both --with-libnuma:
# without libnuma the patch falls back to batch_size = 1 (no effect).
resource "pgbench_postgres_build" "stock" {
  count           = local.build ? 1 : 0
  host_connection = pgbench_host.metal.connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  configure_flags = ["--with-libnuma"]
  install_deps    = true
  # Frame pointers and symbols: the profiles show whole call stacks.
  profiling = true

  timeouts {
    create = "90m"
  }
}

resource "pgbench_postgres_build" "patched" {
  count           = local.build ? 1 : 0
  host_connection = pgbench_host.metal.connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  patches         = [for f in var.patch_files : file(f)]
  configure_flags = ["--with-libnuma"]
  install_deps    = true
  # Frame pointers and symbols: the profiles show whole call stacks.
  profiling = true

  timeouts {
    create = "90m"
  }
}

# A dry run: the installed PostgreSQL plays both variants.
resource "pgbench_postgres_build" "system" {
  count           = local.build ? 0 : 1
  host_connection = pgbench_host.metal.connection_info
  source {
    system = var.system_bin_dir
  }
}

# The optional client host: the same image and zones as the metal host, and
# the stock build, so its pgbench is of the servers' major version.
resource "pgbench_host" "client" {
  count       = var.client_instance_type == null ? 0 : 1
  install_dir = var.install_dir

  ec2 {
    instance_type = var.client_instance_type
    image {
      name   = var.image_name
      owners = [var.image_owner]
    }
    availability_zones = var.availability_zones
    placement_group    = pgbench_placement_group.cluster[0].name
    ssh_cidrs          = var.ssh_cidrs
    ssh_user           = var.ssh_user
    max_lifetime       = var.max_lifetime
    poll_interval      = var.poll_interval
    tags = {
      project = "numa-clock-sweep"
      role    = "client"
    }
  }

  tuning {
    cpu_governor = "performance"
  }
}

resource "pgbench_postgres_build" "client" {
  count           = var.client_instance_type == null ? 0 : 1
  host_connection = pgbench_host.client[0].connection_info
  source {
    tarball = var.postgres_tarball
    sha256  = var.postgres_sha256
  }
  install_deps = true

  timeouts {
    create = "90m"
  }
}

locals {
  stock_bin_dir   = local.build ? pgbench_postgres_build.stock[0].bin_dir : pgbench_postgres_build.system[0].bin_dir
  patched_bin_dir = local.build ? pgbench_postgres_build.patched[0].bin_dir : pgbench_postgres_build.system[0].bin_dir
}

resource "pgbench_hugepage_pool" "pool" {
  host_connection = pgbench_host.metal.connection_info
  pages           = var.hugepages
}

resource "pgbench_ab_benchmark" "read_only" {
  host_connection  = pgbench_host.metal.connection_info
  settings         = local.settings
  hourly_price_usd = pgbench_host.metal.ec2.hourly_price_usd

  variant {
    name       = "stock"
    bin_dir    = local.stock_bin_dir
    huge_pages = "on"
  }
  variant {
    name       = "patched"
    bin_dir    = local.patched_bin_dir
    huge_pages = "on"
  }

  workload {
    mode       = "select-only"
    scale      = var.scale
    clients    = var.clients
    duration   = var.duration
    warmup     = var.warmup
    iterations = var.iterations
    # Only with iterations = "auto"; a number of iterations takes none.
    min_iterations = var.iterations == "auto" ? var.min_iterations : null
    max_iterations = var.iterations == "auto" ? var.max_iterations : null
  }

  # Why patched wins: the counters (on by default) and, with profile,
  # where the server's CPU time went in each variant.
  observe {
    profile = var.profile
  }

  server_numa = var.server_numa
  order       = "alternate"

  dynamic "client" {
    for_each = var.client_instance_type == null ? [] : [1]
    content {
      host_connection = pgbench_host.client[0].connection_info
      bin_dir         = pgbench_postgres_build.client[0].bin_dir
    }
  }

  timeouts {
    create = "12h"
  }

  depends_on = [pgbench_hugepage_pool.pool]
}

# Read-write after read-only: one campaign at a time on the box.
resource "pgbench_ab_benchmark" "read_write" {
  host_connection  = pgbench_host.metal.connection_info
  settings         = local.settings
  hourly_price_usd = pgbench_host.metal.ec2.hourly_price_usd

  variant {
    name       = "stock"
    bin_dir    = local.stock_bin_dir
    huge_pages = "on"
  }
  variant {
    name       = "patched"
    bin_dir    = local.patched_bin_dir
    huge_pages = "on"
  }

  workload {
    mode       = "tpcb"
    scale      = var.scale
    clients    = var.clients
    duration   = var.duration
    warmup     = var.warmup
    iterations = var.iterations
    # Only with iterations = "auto"; a number of iterations takes none.
    min_iterations = var.iterations == "auto" ? var.min_iterations : null
    max_iterations = var.iterations == "auto" ? var.max_iterations : null
  }

  server_numa = var.server_numa
  order       = "alternate"

  dynamic "client" {
    for_each = var.client_instance_type == null ? [] : [1]
    content {
      host_connection = pgbench_host.client[0].connection_info
      bin_dir         = pgbench_postgres_build.client[0].bin_dir
    }
  }

  timeouts {
    create = "12h"
  }

  depends_on = [pgbench_hugepage_pool.pool, pgbench_ab_benchmark.read_only]
}

# TPC-C last: write-heavy, where the clock sweep is not what limits the
# server, so the patch must simply not make it slower. The verdict is on
# NOPM; the check below warns on any cell where patched is slower.
# With a client host, the TPC-C driver (the runner, copied there) runs on it.
resource "pgbench_ab_benchmark" "tpcc" {
  host_connection  = pgbench_host.metal.connection_info
  settings         = local.settings
  hourly_price_usd = pgbench_host.metal.ec2.hourly_price_usd

  variant {
    name       = "stock"
    bin_dir    = local.stock_bin_dir
    huge_pages = "on"
  }
  variant {
    name       = "patched"
    bin_dir    = local.patched_bin_dir
    huge_pages = "on"
  }

  workload {
    mode       = "tpcc"
    warehouses = var.tpcc_warehouses
    clients    = var.tpcc_clients
    duration   = var.duration
    warmup     = var.tpcc_warmup
    iterations = var.iterations
    # Only with iterations = "auto"; a number of iterations takes none.
    min_iterations = var.iterations == "auto" ? var.min_iterations : null
    max_iterations = var.iterations == "auto" ? var.max_iterations : null
  }

  server_numa = var.server_numa
  order       = "alternate"

  dynamic "client" {
    for_each = var.client_instance_type == null ? [] : [1]
    content {
      host_connection = pgbench_host.client[0].connection_info
      bin_dir         = pgbench_postgres_build.client[0].bin_dir
    }
  }

  timeouts {
    create = "12h"
  }

  depends_on = [pgbench_hugepage_pool.pool, pgbench_ab_benchmark.read_write]
}

check "tpcc_no_regression" {
  assert {
    condition     = alltrue([for c in pgbench_ab_benchmark.tpcc.results : c.comparisons[0].verdict != "slower"])
    error_message = "patched is significantly slower than stock on TPC-C NOPM at ${join(", ", [for c in pgbench_ab_benchmark.tpcc.results : "${c.clients} clients (${format("%+.1f", c.comparisons[0].delta_pct)}%)" if c.comparisons[0].verdict == "slower"])}."
  }
}

output "instance" {
  description = "The instance, its price and when its dead-man switch fires."
  value = {
    id               = pgbench_host.metal.ec2.instance_id
    zone             = pgbench_host.metal.ec2.availability_zone
    hourly_price_usd = pgbench_host.metal.ec2.hourly_price_usd
    expires_at       = pgbench_host.metal.ec2.expires_at
    cpus             = pgbench_host.metal.cpus
    numa_nodes       = pgbench_host.metal.numa_nodes
  }
}

output "read_only_summary" {
  value = pgbench_ab_benchmark.read_only.summary_markdown
}

output "read_write_summary" {
  value = pgbench_ab_benchmark.read_write.summary_markdown
}

output "tpcc_summary" {
  value = pgbench_ab_benchmark.tpcc.summary_markdown
}

output "cost_usd" {
  description = "What the three campaigns cost at the instance's hourly price."
  value       = format("%.2f", pgbench_ab_benchmark.read_only.cost_usd + pgbench_ab_benchmark.read_write.cost_usd + pgbench_ab_benchmark.tpcc.cost_usd)
}

output "read_only_flame_graphs" {
  description = "Per client count, the differential flame graph of patched against stock, collected on this machine (open it in a browser)."
  value = [for c in pgbench_ab_benchmark.read_only.results :
  c.comparisons[0].flame_graph == "" ? null : "${pgbench_ab_benchmark.read_only.local_report_dir}/${c.comparisons[0].flame_graph}"]
}
