# Stock vs patched PostgreSQL at three client counts, pinned to NUMA node 0
# for the server and node 1 for pgbench. The postcondition fails the apply
# (and so a CI job) when the patch is significantly slower in any cell.
resource "pgbench_ab_benchmark" "patch" {
  host_connection = pgbench_host.metal.connection_info
  settings = {
    shared_buffers  = "32GB"
    max_connections = "300"
  }

  variant {
    name    = "stock"
    bin_dir = pgbench_postgres_build.stock.bin_dir
  }

  variant {
    name    = "patched"
    bin_dir = pgbench_postgres_build.patched.bin_dir
  }

  workload {
    mode       = "select-only"
    scale      = 3000
    clients    = [1, 16, 64]
    duration   = "60s"
    warmup     = "10s"
    iterations = 10
  }

  server_numa = "cpunodebind=0,membind=0"
  client_numa = "cpunodebind=1,membind=1"
  order       = "alternate"
  alpha       = 0.05

  timeouts {
    create = "12h"
  }

  lifecycle {
    postcondition {
      condition = alltrue(flatten([
        for cell in self.results : [for c in cell.comparisons : c.verdict != "slower"]
      ]))
      error_message = "The patch is significantly slower in at least one cell:\n${self.summary_markdown}"
    }
  }
}

output "patch_summary" {
  value = pgbench_ab_benchmark.patch.summary_markdown
}
