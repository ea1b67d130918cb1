# The machine Terraform runs on, runner in the default install_dir.
terraform import pgbench_host.local local

# An SSH host: user@host:port, optionally followed by ,INSTALL_DIR when the
# runner is not in /usr/local/lib/pgbench. The private key and host key come
# from configuration; the host's facts are read on the next apply.
terraform import pgbench_host.box root@10.0.1.20:22
terraform import pgbench_host.box root@10.0.1.20:22,/opt/pgbench
