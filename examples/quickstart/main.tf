# Quickstart: on the machine Terraform runs on, compare PostgreSQL with 4 KB
# pages against the same server with its shared memory in 2 MB huge pages.
# `terraform apply` prints the summary table and collects the report into
# pgbench-results/<id> here; `terraform destroy` stops and removes the
# campaign on the host and gives the huge pages back.

terraform {
  required_version = ">= 1.5"
  required_providers {
    pgbench = {
      source = "pgbench-tf/pgbench"
    }
  }
}

provider "pgbench" {}

variable "pg_bin_dir" {
  description = "Directory of an installed PostgreSQL's binaries (postgres, initdb, pg_ctl, pgbench)."
  type        = string
  default     = "/usr/lib/postgresql/15/bin"
}

variable "clients" {
  description = "pgbench client counts, one cell each."
  type        = list(number)
  default     = [1, 2]
}

variable "duration" {
  description = "Length of each measured run."
  type        = string
  default     = "4s"
}

locals {
  # Sized so the dataset (scale 10, about 150 MB) is cached in shared
  # buffers: select-only then measures the memory path huge pages change.
  settings = {
    shared_buffers = "256MB"
  }
}

resource "pgbench_host" "this" {
  local = true

  bootstrap {
    # Installed with the package manager only when missing.
    packages = ["postgresql"]
  }
}

resource "pgbench_postgres_build" "system" {
  host_connection = pgbench_host.this.connection_info

  source {
    system = var.pg_bin_dir
  }
}

# Exactly the huge pages a server with these settings asks for
# (postgres -C shared_memory_size_in_huge_pages), restored on destroy.
resource "pgbench_hugepage_pool" "this" {
  host_connection = pgbench_host.this.connection_info

  size_for {
    bin_dir  = pgbench_postgres_build.system.bin_dir
    settings = local.settings
  }
}

resource "pgbench_ab_benchmark" "pages" {
  host_connection = pgbench_host.this.connection_info
  settings        = local.settings

  variant {
    name       = "4k"
    bin_dir    = pgbench_postgres_build.system.bin_dir
    huge_pages = "off"
  }

  variant {
    name       = "2m"
    bin_dir    = pgbench_postgres_build.system.bin_dir
    huge_pages = "on"
  }

  workload {
    mode     = "select-only"
    scale    = 10
    clients  = var.clients
    duration = var.duration
    # iterations and warmup keep their defaults: 10 runs per variant and
    # client count, each server start followed by an unrecorded warm-up.
  }

  # The pool must exist before the huge_pages = "on" server starts.
  depends_on = [pgbench_hugepage_pool.this]
}

# A regression check a CI pipeline can read: a warning in the plan/apply
# output when huge pages made any cell significantly slower. Use a
# lifecycle postcondition instead to fail the apply (see
# examples/resources/pgbench_ab_benchmark).
check "huge_pages_not_slower" {
  assert {
    condition = alltrue(flatten([
      for cell in pgbench_ab_benchmark.pages.results : [
        for c in cell.comparisons : c.verdict != "slower"
      ]
    ]))
    error_message = "2 MB huge pages were significantly slower than 4 KB pages in at least one cell: see the summary output."
  }
}

output "summary" {
  description = "The campaign's Markdown summary, ready for a mailing-list post."
  value       = pgbench_ab_benchmark.pages.summary_markdown
}

output "verdicts" {
  description = "Per client count: the 2m vs 4k delta of median TPS and the verdict."
  value = {
    for cell in pgbench_ab_benchmark.pages.results :
    tostring(cell.clients) => {
      for c in cell.comparisons :
      "${c.candidate} vs ${c.baseline}" => "${format("%+.2f", c.delta_pct)}% (p=${format("%.3f", c.p_value)}): ${c.verdict}"
    }
  }
}

output "huge_pages_observed" {
  description = "What each variant's server really used."
  value       = pgbench_ab_benchmark.pages.huge_pages_observed
}

output "report_dir" {
  description = "Where the campaign ran on the host (removed at destroy)."
  value       = pgbench_ab_benchmark.pages.report_dir
}

output "local_report_dir" {
  description = "The collected report on this machine: journal, results, summary, chart, sysinfo, benchstat files and raw logs. It stays after destroy."
  value       = pgbench_ab_benchmark.pages.local_report_dir
}
