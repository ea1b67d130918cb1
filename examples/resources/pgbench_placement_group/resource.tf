# A metal server and the host that drives it, a short hop apart: both
# instances launch into one cluster placement group, in one zone.
resource "pgbench_placement_group" "bench" {
  name = "pgbench-clock-sweep"
}

resource "pgbench_host" "server" {
  ec2 {
    instance_type      = "r8i.metal-96xl"
    ami                = "ami-0123456789abcdef0"
    ssh_cidrs          = ["203.0.113.0/24"]
    availability_zones = ["us-east-2a", "us-east-2b"]
    placement_group    = pgbench_placement_group.bench.name
  }
}

resource "pgbench_host" "client" {
  ec2 {
    instance_type      = "c7i.8xlarge"
    ami                = "ami-0123456789abcdef0"
    ssh_cidrs          = ["203.0.113.0/24"]
    availability_zones = ["us-east-2a", "us-east-2b"]
    placement_group    = pgbench_placement_group.bench.name
  }
}
