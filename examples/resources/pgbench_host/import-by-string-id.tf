# Adopt a running EC2 instance with an import block (Terraform 1.5+): the
# plan shows the import and an in-place update that pins the host key from
# the console, logs in with the key pair and installs the runner.
import {
  to = pgbench_host.metal
  id = "i-0123456789abcdef0"
}

resource "pgbench_host" "metal" {
  ec2 {
    instance_type = "r8i.metal-96xl" # must be the instance's type
    ami           = "ami-0123456789abcdef0"
    ssh_cidrs     = ["203.0.113.7/32"]
    key_name      = "bench"                     # the key pair the instance
    private_key   = file("~/.ssh/bench.pem")    # was launched with
    tags          = { project = "clock-sweep" } # kept, merged with default_tags
  }
}
