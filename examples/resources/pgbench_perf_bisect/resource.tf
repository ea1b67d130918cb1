# Which commit between REL_16_0 and REL_16_1 made select-only at 64 clients
# slower? Each step builds a commit (through ccache) and measures it against
# both ends; the answer is first_bad_commit.
resource "pgbench_perf_bisect" "slow_select" {
  host_connection = pgbench_host.metal.connection_info
  git_url         = "https://git.postgresql.org/git/postgresql.git"
  good            = "REL_16_0"
  bad             = "REL_16_1"
  direction       = "regression"
  configure_flags = ["--without-icu"]
  install_deps    = true

  settings = {
    shared_buffers = "8GB"
  }

  workload {
    mode       = "select-only"
    scale      = 100
    clients    = [64]
    duration   = "30s"
    iterations = 5
  }

  server_numa = "cpunodebind=0,membind=0"
  client_numa = "cpunodebind=1,membind=1"

  timeouts {
    create = "12h"
  }
}

output "first_bad_commit" {
  value = pgbench_perf_bisect.slow_select.first_bad_commit
}

output "bisect_summary" {
  value = pgbench_perf_bisect.slow_select.summary_markdown
}
