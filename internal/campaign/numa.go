package campaign

import (
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// NUMA placement of a campaign: the pinning specs (server_numa,
// client_numa), the numactl commands that wrap the postmaster and pgbench,
// and the warning when the two may share CPUs.

// numaOptions are the numactl policies a pinning spec may use.
var numaOptions = map[string]bool{
	"cpunodebind": true, "membind": true, "physcpubind": true, "interleave": true, "preferred": true, "localalloc": true,
}

// ParseNUMA turns "cpunodebind=0,membind=0" into numactl arguments.
func ParseNUMA(spec string) ([]string, error) {
	if spec == "" {
		return nil, nil
	}
	var args []string
	for _, part := range splitNUMA(spec) {
		k, v, hasV := strings.Cut(strings.TrimSpace(part), "=")
		if !numaOptions[k] {
			return nil, fmt.Errorf("unknown numactl option %q in %q (want cpunodebind=N, membind=N, physcpubind=CPUS, interleave=N, preferred=N or localalloc)", k, spec)
		}
		if k == "localalloc" {
			if hasV {
				return nil, fmt.Errorf("localalloc takes no value in %q", spec)
			}
			args = append(args, "--localalloc")
			continue
		}
		if !hasV || !numaList.MatchString(v) {
			return nil, fmt.Errorf("%s needs a node or cpu list, e.g. %s=0, in %q", k, k, spec)
		}
		args = append(args, "--"+k+"="+v)
	}
	return args, nil
}

// splitNUMA splits a pinning spec into options; a comma followed by a
// number continues the previous option's list (physcpubind=1,3).
func splitNUMA(spec string) []string {
	var parts []string
	for _, p := range strings.Split(spec, ",") {
		if len(parts) > 0 && p != "" && p[0] >= '0' && p[0] <= '9' {
			parts[len(parts)-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

// numaList is a node or CPU list as numactl takes it: 0, 0-3, 1,3 or all.
var numaList = regexp.MustCompile(`^[0-9][0-9,\-]*$|^all$`)

// pin resolves the numactl wrappers of the server and of the client, and
// warns when the two may compete for CPUs.
func (e *engine) pin() error {
	var err error
	if e.serverWrap, err = numaWrap(e.cfg.ServerNUMA); err != nil {
		return err
	}
	if e.client != nil {
		// pgbench runs on the client host, pinned there (clientSide.pin):
		// it cannot compete with the server for CPUs.
		return nil
	}
	if e.clientWrap, err = numaWrap(e.cfg.ClientNUMA); err != nil {
		return err
	}
	e.checkOverlap()
	return nil
}

func numaWrap(spec string) ([]string, error) {
	args, err := ParseNUMA(spec)
	if err != nil || len(args) == 0 {
		return nil, err
	}
	path, err := exec.LookPath("numactl")
	if err != nil {
		return nil, &UnmetError{fmt.Errorf("pinning %q needs numactl, which is not installed: %w", spec, err)}
	}
	return append([]string{path}, args...), nil
}

// checkOverlap warns when the client and the server may run on the same
// CPUs, which makes them compete and blurs what is being measured.
func (e *engine) checkOverlap() {
	if e.cfg.ServerNUMA == "" && e.cfg.ClientNUMA == "" {
		return
	}
	if e.cfg.ServerNUMA == "" || e.cfg.ClientNUMA == "" {
		e.warn("only one of the server and the client is pinned (server %q, client %q): the unpinned side may use the other's CPUs", e.cfg.ServerNUMA, e.cfg.ClientNUMA)
		return
	}
	nodes := e.nodes
	if nodes == nil {
		nodes, _ = sysinfo.ReadNodes("/")
	}
	if shared := sharedCPUs(e.cfg.ServerNUMA, e.cfg.ClientNUMA, nodes); len(shared) > 0 {
		e.warn("client and server share %d CPUs (server %q, client %q): they compete with each other", len(shared), e.cfg.ServerNUMA, e.cfg.ClientNUMA)
	}
}

// sharedCPUs is the sorted CPUs both pinning specs allow. A spec that only
// sets a memory policy (membind=0) leaves its process free to run on every
// CPU, so it counts as all the nodes' CPUs.
func sharedCPUs(server, client string, nodes []sysinfo.Node) []int {
	all := map[int]bool{}
	for _, n := range nodes {
		for _, c := range n.CPUs {
			all[c] = true
		}
	}
	if len(all) == 0 {
		// No NUMA topology in sysfs: number the CPUs Go sees.
		for i := 0; i < runtime.NumCPU(); i++ {
			all[i] = true
		}
	}
	s, c := cpuSet(server, nodes), cpuSet(client, nodes)
	if s == nil {
		s = all
	}
	if c == nil {
		c = all
	}
	var shared []int
	for cpu := range s {
		if c[cpu] {
			shared = append(shared, cpu)
		}
	}
	sort.Ints(shared)
	return shared
}

// cpuSet is the CPUs a pinning spec allows; nil when it does not restrict CPUs.
func cpuSet(spec string, nodes []sysinfo.Node) map[int]bool {
	for _, part := range splitNUMA(spec) {
		k, val, _ := strings.Cut(part, "=")
		if k != "cpunodebind" && k != "physcpubind" {
			continue
		}
		list, err := sysinfo.ParseCPUList(val)
		if err != nil {
			return nil
		}
		set := map[int]bool{}
		if k == "physcpubind" {
			for _, c := range list {
				set[c] = true
			}
			return set
		}
		for _, id := range list {
			for _, n := range nodes {
				if n.ID == id {
					for _, c := range n.CPUs {
						set[c] = true
					}
				}
			}
		}
		return set
	}
	return nil
}
