# The machine Terraform runs on, runner in the default install_dir.
terraform import pgbench_host.local local

# An SSH host: user@host:port, optionally followed by ,INSTALL_DIR when the
# runner is not in /usr/local/lib/pgbench. The private key and host key come
# from configuration; the host's facts are read on the next apply.
terraform import pgbench_host.box root@10.0.1.20:22
terraform import pgbench_host.box root@10.0.1.20:22,/opt/pgbench

# A running EC2 instance, by its id (optionally ,INSTALL_DIR). Import reads
# the instance (DescribeInstances); the configuration must have an ec2 block
# with the instance's instance_type and its key pair (key_name, and
# private_key or agent = true with the key in the ssh-agent). The next apply is an in-place update that pins the host key
# from the instance's console (host_key_policy), logs in with the key,
# installs the runner and applies bootstrap and tuning; after it the plan is
# empty. The launch arguments (image, subnet, security groups, root volume,
# max_lifetime, owner) are taken from the configuration as written, not
# checked against the instance (instance_type and ami are), and an instance
# launched without the provider has no dead-man switch unless its user data
# set one. `terraform destroy` terminates the instance.
terraform import pgbench_host.metal i-0123456789abcdef0
