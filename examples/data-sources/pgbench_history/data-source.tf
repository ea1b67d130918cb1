# The nightly series of master against the last release, and their change
# points, from the results database of the provider's history block.
data "pgbench_history" "nightly" {
  baseline  = "release"
  candidate = "master"
}

# Fail the run when a series' newest change made master slower by more
# than 2 points of delta.
check "no_regression" {
  assert {
    condition = alltrue([
      for s in data.pgbench_history.nightly.series :
      length(s.changes) == 0 || s.changes[length(s.changes) - 1].after_pct > s.changes[length(s.changes) - 1].before_pct - 2
    ])
    error_message = "a series of master vs release changed for the worse"
  }
}
