// Package sysinfo reads host facts (CPUs, NUMA layout, memory, huge pages,
// kernel knobs) from /proc and /sys. Every reader takes a root directory so
// synthetic trees can stand in for hosts we do not have.
package sysinfo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Unsupported is reported for a knob the host does not have.
const Unsupported = "unsupported"

// Info is the JSON of `pgbench-runner sysinfo --json`.
type Info struct {
	CPUs           int    `json:"cpus"`
	Cores          int    `json:"cores"`
	ThreadsPerCore int    `json:"threads_per_core"`
	Sockets        int    `json:"sockets"`
	CPUModel       string `json:"cpu_model"`
	// InstanceType is the EC2 instance type (e.g. r8i.metal-96xl), which
	// EC2 puts in the DMI product name; empty elsewhere.
	InstanceType         string     `json:"instance_type,omitempty"`
	NUMANodes            []Node     `json:"numa_nodes"`
	MemoryTotalBytes     int64      `json:"memory_total_bytes"`
	MemoryAvailableBytes int64      `json:"memory_available_bytes"`
	HugePages            []HugePool `json:"hugepages"`
	THP                  string     `json:"thp"`
	NUMABalancing        string     `json:"numa_balancing"`
	Governor             string     `json:"governor"`
	Kernel               string     `json:"kernel"`
	OS                   string     `json:"os"`
	BootCmdline          string     `json:"boot_cmdline"`
	NUMACtl              NUMACtl    `json:"numactl"`
}

// NUMACtl is the NUMA distance matrix and the cross-check against
// `numactl --hardware`. Distances come from sysfs (node<N>/distance), so they
// are known even where numactl is not installed; Available says whether
// numactl ran, and Warning records a disagreement between the two.
type NUMACtl struct {
	Available     bool    `json:"available"`
	Nodes         int     `json:"nodes"`
	NodeDistances [][]int `json:"node_distances"`
	Warning       string  `json:"warning,omitempty"`
}

// Node is one NUMA node.
type Node struct {
	ID          int        `json:"id"`
	CPUs        []int      `json:"cpus"`
	MemoryBytes int64      `json:"memory_bytes"`
	HugePages   []HugePool `json:"hugepages"`
}

// HugePool is the state of one huge-page size, globally or on one node.
// Per-node pools have no reserved count in sysfs; it is reported as 0.
type HugePool struct {
	SizeBytes int64 `json:"size_bytes"`
	Total     int64 `json:"total"`
	Free      int64 `json:"free"`
	Reserved  int64 `json:"reserved"`
	Surplus   int64 `json:"surplus"`
}

// Read gathers all facts under root ("/" on a real host).
func Read(root string) (*Info, error) {
	var in Info
	var err error
	cpus, err := ParseCPUList(readTrim(root, "sys/devices/system/cpu/online"))
	if err != nil {
		return nil, fmt.Errorf("read online cpus: %w", err)
	}
	in.CPUs = len(cpus)
	in.Cores, in.Sockets = countCores(root, cpus)
	if in.Cores > 0 {
		in.ThreadsPerCore = in.CPUs / in.Cores
	}
	in.CPUModel = cpuModel(root)
	if readTrim(root, "sys/class/dmi/id/sys_vendor") == "Amazon EC2" {
		in.InstanceType = readTrim(root, "sys/class/dmi/id/product_name")
	}
	mem, err := ParseMeminfo(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return nil, err
	}
	in.MemoryTotalBytes = mem["MemTotal"]
	in.MemoryAvailableBytes = mem["MemAvailable"]
	if in.NUMANodes, err = ReadNodes(root); err != nil {
		return nil, err
	}
	if len(in.NUMANodes) == 0 {
		// Kernels built without NUMA have no node directories: one node holds all.
		in.NUMANodes = []Node{{ID: 0, CPUs: cpus, MemoryBytes: in.MemoryTotalBytes, HugePages: []HugePool{}}}
	}
	in.NUMACtl = NUMACtl{Nodes: len(in.NUMANodes), NodeDistances: readDistances(root, in.NUMANodes)}
	if in.HugePages, err = ReadHugePools(root); err != nil {
		return nil, err
	}
	in.THP = THPMode(root)
	in.NUMABalancing = orUnsupported(readTrim(root, "proc/sys/kernel/numa_balancing"))
	in.Governor = orUnsupported(readTrim(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
	in.Kernel = readTrim(root, "proc/sys/kernel/osrelease")
	in.OS = osName(root)
	in.BootCmdline = readTrim(root, "proc/cmdline")
	return &in, nil
}

func orUnsupported(s string) string {
	if s == "" {
		return Unsupported
	}
	return s
}

// readTrim returns the trimmed content of root/rel, or "" if it cannot be read.
func readTrim(root, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ParseCPUList parses a kernel CPU list such as "0-3,8,10-11".
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	out := []int{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parse cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parse cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return nil, fmt.Errorf("parse cpu list %q: range %d-%d is reversed", s, a, b)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// countCores counts distinct (package, core) pairs and packages among cpus.
func countCores(root string, cpus []int) (cores, sockets int) {
	type key struct{ pkg, core string }
	seen := map[key]bool{}
	pkgs := map[string]bool{}
	for _, c := range cpus {
		dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology", c)
		pkg := readTrim(root, dir+"/physical_package_id")
		core := readTrim(root, dir+"/core_id")
		if core == "" {
			core = "cpu" + strconv.Itoa(c) // no topology: count each CPU as a core
		}
		seen[key{pkg, core}] = true
		pkgs[pkg] = true
	}
	return len(seen), len(pkgs)
}

func cpuModel(root string) string {
	f, err := os.Open(filepath.Join(root, "proc/cpuinfo"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ParseMeminfo parses a /proc/meminfo-style file into bytes per key. Lines
// of node meminfo files ("Node 0 MemTotal: ...") are keyed without the prefix.
// Counts without a unit (HugePages_Total) are kept as they are.
func ParseMeminfo(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if fields := strings.Fields(k); len(fields) == 3 && fields[0] == "Node" {
			k = fields[2]
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %s: %w", path, k, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		m[strings.TrimSpace(k)] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return m, nil
}

// ReadNodes reads the NUMA nodes under root/sys/devices/system/node.
func ReadNodes(root string) ([]Node, error) {
	base := filepath.Join(root, "sys/devices/system/node")
	ents, err := os.ReadDir(base)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", base, err)
	}
	var nodes []Node
	for _, e := range ents {
		idStr, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		id, err := strconv.Atoi(idStr)
		if err != nil {
			continue
		}
		dir := filepath.Join(base, e.Name())
		n := Node{ID: id}
		b, err := os.ReadFile(filepath.Join(dir, "cpulist"))
		if err != nil {
			return nil, fmt.Errorf("read node %d cpus: %w", id, err)
		}
		if n.CPUs, err = ParseCPUList(string(b)); err != nil {
			return nil, fmt.Errorf("node %d: %w", id, err)
		}
		mem, err := ParseMeminfo(filepath.Join(dir, "meminfo"))
		if err != nil {
			return nil, err
		}
		n.MemoryBytes = mem["MemTotal"]
		if n.HugePages, err = readPools(filepath.Join(dir, "hugepages")); err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes, nil
}

// ReadHugePools reads the global huge-page pools, one per supported size.
func ReadHugePools(root string) ([]HugePool, error) {
	return readPools(filepath.Join(root, "sys/kernel/mm/hugepages"))
}

// readPools reads hugepages-<N>kB directories under dir, smallest size first.
func readPools(dir string) ([]HugePool, error) {
	pools := []HugePool{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return pools, nil
		}
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range ents {
		kb, ok := PoolDirSizeKB(e.Name())
		if !ok {
			continue
		}
		p := HugePool{SizeBytes: kb * 1024}
		d := filepath.Join(dir, e.Name())
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"nr_hugepages", &p.Total}, {"free_hugepages", &p.Free}, {"resv_hugepages", &p.Reserved}, {"surplus_hugepages", &p.Surplus}} {
			s := readTrim(d, f.name)
			if s == "" {
				continue // nodes have no resv_hugepages
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("parse %s/%s: %w", d, f.name, err)
			}
			*f.dst = v
		}
		pools = append(pools, p)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].SizeBytes < pools[j].SizeBytes })
	return pools, nil
}

// PoolDirSizeKB parses a sysfs pool directory name "hugepages-2048kB".
func PoolDirSizeKB(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "hugepages-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "kB")
	if !ok {
		return 0, false
	}
	kb, err := strconv.ParseInt(s, 10, 64)
	return kb, err == nil
}

// THPMode returns the bracketed transparent huge page mode, or "unsupported".
func THPMode(root string) string {
	return BracketedMode(readTrim(root, "sys/kernel/mm/transparent_hugepage/enabled"))
}

// BracketedMode extracts "madvise" from "always [madvise] never", or
// returns "unsupported" when there is no bracketed word.
func BracketedMode(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return Unsupported
	}
	return s[i+1 : j]
}

func osName(root string) string {
	for _, rel := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				return strings.Trim(v, `"'`)
			}
		}
	}
	return ""
}

// readDistances reads the sysfs distance row of every node, in node order. It
// returns an empty matrix when any row is missing or malformed (kernels
// without NUMA have no node directories), rather than a partial one.
func readDistances(root string, nodes []Node) [][]int {
	out := [][]int{}
	for _, n := range nodes {
		fields := strings.Fields(readTrim(root, fmt.Sprintf("sys/devices/system/node/node%d/distance", n.ID)))
		if len(fields) != len(nodes) {
			return [][]int{}
		}
		row := make([]int, len(fields))
		for i, f := range fields {
			v, err := strconv.Atoi(f)
			if err != nil {
				return [][]int{}
			}
			row[i] = v
		}
		out = append(out, row)
	}
	return out
}

// NumactlHardware is what `numactl --hardware` reports.
type NumactlHardware struct {
	Nodes     int     // from "available: N nodes (...)"
	Distances [][]int // the "node distances:" matrix, in the order printed
}

// ParseNumactlHardware parses the text of `numactl --hardware`.
func ParseNumactlHardware(text string) (NumactlHardware, error) {
	hw := NumactlHardware{Nodes: -1, Distances: [][]int{}}
	inDistances := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "available:"):
			f := strings.Fields(strings.TrimPrefix(line, "available:"))
			if len(f) < 2 || !strings.HasPrefix(f[1], "node") {
				return hw, fmt.Errorf("parse numactl --hardware: bad line %q", line)
			}
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return hw, fmt.Errorf("parse numactl --hardware: bad line %q: %w", line, err)
			}
			hw.Nodes = n
		case line == "node distances:":
			inDistances = true
		case inDistances && strings.HasPrefix(line, "node"):
			// The header row of node ids.
		case inDistances && line != "":
			id, rest, ok := strings.Cut(line, ":")
			if !ok {
				inDistances = false
				continue
			}
			if _, err := strconv.Atoi(strings.TrimSpace(id)); err != nil {
				return hw, fmt.Errorf("parse numactl --hardware: bad distance row %q", line)
			}
			var row []int
			for _, f := range strings.Fields(rest) {
				v, err := strconv.Atoi(f)
				if err != nil {
					return hw, fmt.Errorf("parse numactl --hardware: bad distance row %q: %w", line, err)
				}
				row = append(row, v)
			}
			hw.Distances = append(hw.Distances, row)
		}
	}
	if hw.Nodes < 0 {
		return hw, fmt.Errorf("parse numactl --hardware: no \"available:\" line")
	}
	return hw, nil
}

// CrossCheck records that numactl ran and compares what it saw with sysfs.
// Where sysfs had no distances, numactl's are used.
func (c *NUMACtl) CrossCheck(hw NumactlHardware) {
	c.Available = true
	var warns []string
	if hw.Nodes != c.Nodes {
		warns = append(warns, fmt.Sprintf("numactl reports %d nodes, sysfs %d", hw.Nodes, c.Nodes))
	}
	if len(c.NodeDistances) == 0 {
		c.NodeDistances = hw.Distances
	} else if fmt.Sprint(hw.Distances) != fmt.Sprint(c.NodeDistances) {
		warns = append(warns, fmt.Sprintf("numactl distances %v differ from sysfs %v", hw.Distances, c.NodeDistances))
	}
	c.Warning = strings.Join(warns, "; ")
}
