package observe

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClientUsage is the client's CPU use over a run against what it may use.
type ClientUsage struct {
	// CPUSeconds is the user and system time of the pgbench process.
	CPUSeconds  float64
	WallSeconds float64
	// Threads is pgbench's -j: it cannot use more CPUs than that.
	Threads int
	// AllowedCPUs is the least of Threads, the CPUs of the process's
	// affinity mask and its cgroup's CPU quota.
	AllowedCPUs float64
}

// Share is the part of what it may use that the client used.
func (u ClientUsage) Share() float64 {
	if u.WallSeconds <= 0 || u.AllowedCPUs <= 0 {
		return 0
	}
	return u.CPUSeconds / (u.WallSeconds * u.AllowedCPUs)
}

// cgroupRoot is where the cgroup file systems are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// ProcessLimit reads what CPU a running process may use: the number of
// CPUs in its affinity mask (Cpus_allowed_list of /proc/PID/status) and
// its cgroup's CPU quota in CPUs (cgroup v2 cpu.max, or v1's
// cpu.cfs_quota_us / cpu.cfs_period_us), +Inf when it has none. The
// tightest quota on the way from its cgroup up to the root counts.
func ProcessLimit(pid int) (cpus int, quota float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			cpus = countList(strings.TrimSpace(v))
		}
	}
	if cpus == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no Cpus_allowed_list", pid)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cpus, math.Inf(1), nil
	}
	return cpus, cgroupQuota(string(cg)), nil
}

// countList counts the CPUs of a list such as "0-3,8,10-11".
func countList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, rng := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if rng {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}

// cgroupQuota is the tightest CPU quota over the cgroups of a process's
// /proc/PID/cgroup, in CPUs, and of their ancestors; +Inf for none.
func cgroupQuota(procCgroup string) float64 {
	best := math.Inf(1)
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dirs []string
		switch {
		case f[0] == "0" && f[1] == "": // v2
			dirs = []string{cgroupRoot}
		case hasController(f[1], "cpu"): // v1
			dirs = []string{filepath.Join(cgroupRoot, "cpu"), filepath.Join(cgroupRoot, "cpu,cpuacct"), filepath.Join(cgroupRoot, "cpuacct,cpu")}
		default:
			continue
		}
		for _, d := range dirs {
			for p := filepath.Join(d, f[2]); strings.HasPrefix(p, d); p = filepath.Dir(p) {
				best = math.Min(best, quotaIn(p))
				if p == d {
					break
				}
			}
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// quotaIn is the CPU quota of the cgroup directory dir, +Inf for none.
func quotaIn(dir string) float64 {
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && p > 0 {
				return q / p
			}
		}
		return math.Inf(1)
	}
	qb, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	pb, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return math.Inf(1)
	}
	q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return math.Inf(1)
	}
	return q / p
}
