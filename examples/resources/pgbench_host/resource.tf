# The machine Terraform runs on, tuned for benchmarking. Destroy restores
# the previous values of every knob.
resource "pgbench_host" "local" {
  local = true

  bootstrap {
    packages = ["postgresql", "numactl"]
  }

  tuning {
    numa_balancing        = "off"
    transparent_hugepages = "never"
    cpu_governor          = "performance" # "unsupported" on hosts without cpufreq
  }
}

# An existing machine over SSH with a pinned host key, reached through a
# jump host.
resource "pgbench_host" "box" {
  ssh {
    host        = "10.0.1.20"
    user        = "root"
    private_key = file("~/.ssh/id_ed25519")
    host_key    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleHostKeyExampleHostKeyExampleHostK"

    bastion {
      host        = "bastion.example.com"
      user        = "ec2-user"
      private_key = file("~/.ssh/id_ed25519")
      host_key    = "SHA256:3q2+7w8Example0Fingerprint0Example0Fingerpr"
    }
  }

  tuning {
    numa_balancing = "off"
    cpu_governor   = "performance"
  }
}

output "box_facts" {
  value = {
    cpus       = pgbench_host.box.cpus
    numa_nodes = pgbench_host.box.numa_nodes
    memory_gib = pgbench_host.box.memory_bytes / 1073741824
    cpu_model  = pgbench_host.box.cpu_model
    kernel     = pgbench_host.box.kernel
    tuning     = pgbench_host.box.tuning_applied
  }
}
