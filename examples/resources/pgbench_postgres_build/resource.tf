# The PostgreSQL already installed on the host: nothing is built, and destroy
# leaves it alone.
resource "pgbench_postgres_build" "system" {
  host_connection = pgbench_host.metal.connection_info
  source {
    system = "/usr/lib/postgresql/15/bin"
  }
}

variable "postgres_sha256" {
  description = "sha256 of the release tarball, from its .sha256 file on ftp.postgresql.org."
  type        = string
}

# Stock and patched builds from the same release tarball. An identical build
# (same sources, patches, flags and compiler) is reused instead of rebuilt.
resource "pgbench_postgres_build" "stock" {
  host_connection = pgbench_host.metal.connection_info
  source {
    tarball = "https://ftp.postgresql.org/pub/source/v17.2/postgresql-17.2.tar.bz2"
    sha256  = var.postgres_sha256
  }
  configure_flags = ["--with-libnuma"]
  cflags          = "-O2 -g"
  install_deps    = true

  timeouts {
    create = "90m"
  }
}

resource "pgbench_postgres_build" "patched" {
  host_connection = pgbench_host.metal.connection_info
  source {
    tarball = "https://ftp.postgresql.org/pub/source/v17.2/postgresql-17.2.tar.bz2"
    sha256  = var.postgres_sha256
  }
  patches         = [file("${path.module}/v3-0001-clock-sweep.patch")]
  configure_flags = ["--with-libnuma"]
  cflags          = "-O2 -g"
  install_deps    = true
}

# Or straight from a git ref.
resource "pgbench_postgres_build" "master" {
  host_connection = pgbench_host.metal.connection_info
  source {
    git = "https://git.postgresql.org/git/postgresql.git"
    ref = "master"
  }
}

output "patched_bin_dir" {
  value = pgbench_postgres_build.patched.bin_dir
}
