# Size the pool for the server's own shared memory segment with these
# settings (PostgreSQL's shared_memory_size_in_huge_pages), the two-pass
# sizing of the huge-pages runbook. Destroy puts vm.nr_hugepages back.
resource "pgbench_hugepage_pool" "for_postgres" {
  host_connection = pgbench_host.metal.connection_info

  size_for {
    bin_dir = pgbench_postgres_build.stock.bin_dir
    settings = {
      shared_buffers  = "32GB"
      max_connections = "300"
    }
  }
}

# Or a fixed share of memory, as the runbook does by hand.
resource "pgbench_hugepage_pool" "quarter" {
  host_connection = pgbench_host.metal.connection_info
  memory_fraction = 0.25
  overcommit      = true
}

# Or an exact count of 1 GB pages on one NUMA node.
resource "pgbench_hugepage_pool" "node0" {
  host_connection = pgbench_host.metal.connection_info
  pages           = 40
  page_size       = "1GB"
  numa_node       = 0
}

output "pool_pages" {
  value = pgbench_hugepage_pool.for_postgres.pages_total
}
