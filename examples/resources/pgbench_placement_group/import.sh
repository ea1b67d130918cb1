# A placement group is imported by its name.
terraform import pgbench_placement_group.bench pgbench-clock-sweep
