package main

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestSysinfoJSON(t *testing.T) {
	code, out, errOut := runCapture(t, "sysinfo", "--json")
	if code != 0 {
		t.Fatalf("sysinfo --json exit = %d, want 0; stderr %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	for _, k := range []string{"cpus", "cores", "threads_per_core", "cpu_model", "numa_nodes", "memory_total_bytes",
		"memory_available_bytes", "hugepages", "thp", "numa_balancing", "governor", "kernel", "os", "boot_cmdline"} {
		if _, ok := got[k]; !ok {
			t.Errorf("sysinfo --json has no %q", k)
		}
	}
	if n, _ := got["cpus"].(float64); int(n) != runtime.NumCPU() {
		t.Errorf("cpus = %v, want %d", got["cpus"], runtime.NumCPU())
	}
}

func TestSysinfoNumactl(t *testing.T) {
	testhost.RequireCommand(t, "numactl")
	code, out, errOut := runCapture(t, "sysinfo", "--json")
	if code != 0 {
		t.Fatalf("sysinfo --json exit = %d, want 0; stderr %s", code, errOut)
	}
	var got struct {
		NUMANodes []any `json:"numa_nodes"`
		NUMACtl   struct {
			Available     bool    `json:"available"`
			Nodes         int     `json:"nodes"`
			NodeDistances [][]int `json:"node_distances"`
			Warning       string  `json:"warning"`
		} `json:"numactl"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	n := got.NUMACtl
	if !n.Available || n.Nodes != len(got.NUMANodes) || len(n.NodeDistances) != n.Nodes || n.Warning != "" {
		t.Errorf("numactl = %+v, want available, %d nodes, a %[2]dx%[2]d matrix and no warning", n, len(got.NUMANodes))
	}
}
