package sysinfo

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// layout describes a synthetic host. CPU numbering follows what Linux does on
// Intel servers: all first hyperthreads (socket by socket), then all second
// ones, so node 0 of a 2-socket box is "0-31,64-95".
type layout struct {
	model           string
	sockets         int
	coresPerSocket  int
	threads         int
	nodesPerSocket  int // 3 for sub-NUMA clustering SNC3
	memPerNodeKB    int64
	huge2M          []int64 // per-node nr_hugepages of 2 MB pages
	governor        string  // "" means no cpufreq
	thp             string
	numaBalancing   string
	noNodeDir       bool
	vendor, product string // DMI sys_vendor and product_name; "" means none
}

func (l layout) cpus() int { return l.sockets * l.coresPerSocket * l.threads }

// writeTree builds a /proc and /sys tree for l under a temp dir.
func writeTree(t *testing.T, l layout) string {
	t.Helper()
	root := t.TempDir()
	w := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if l.vendor != "" {
		w("sys/class/dmi/id/sys_vendor", l.vendor+"\n")
		w("sys/class/dmi/id/product_name", l.product+"\n")
	}
	n := l.cpus()
	nodes := l.sockets * l.nodesPerSocket
	nodeCPUs := make([][]int, nodes)
	var cpuinfo strings.Builder
	for cpu := 0; cpu < n; cpu++ {
		perThread := l.sockets * l.coresPerSocket
		s := (cpu % perThread) / l.coresPerSocket
		c := cpu % l.coresPerSocket
		node := s*l.nodesPerSocket + c/(l.coresPerSocket/l.nodesPerSocket)
		nodeCPUs[node] = append(nodeCPUs[node], cpu)
		top := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", cpu)
		w(top+"physical_package_id", fmt.Sprintf("%d\n", s))
		w(top+"core_id", fmt.Sprintf("%d\n", c))
		fmt.Fprintf(&cpuinfo, "processor\t: %d\nmodel name\t: %s\n\n", cpu, l.model)
	}
	w("sys/devices/system/cpu/online", fmt.Sprintf("0-%d\n", n-1))
	w("proc/cpuinfo", cpuinfo.String())
	var totalHuge int64
	for i := 0; i < nodes; i++ {
		var h int64
		if i < len(l.huge2M) {
			h = l.huge2M[i]
		}
		totalHuge += h
		if l.noNodeDir {
			continue
		}
		d := fmt.Sprintf("sys/devices/system/node/node%d/", i)
		w(d+"cpulist", formatCPUList(nodeCPUs[i])+"\n")
		// Distances as firmware reports them: 10 local, 12 to a sub-NUMA
		// sibling on the same socket, 21 across sockets.
		var dist []string
		for j := 0; j < nodes; j++ {
			switch {
			case j == i:
				dist = append(dist, "10")
			case j/l.nodesPerSocket == i/l.nodesPerSocket:
				dist = append(dist, "12")
			default:
				dist = append(dist, "21")
			}
		}
		w(d+"distance", strings.Join(dist, " ")+"\n")
		w(d+"meminfo", fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d HugePages_Total: %d\n", i, l.memPerNodeKB, i, l.memPerNodeKB/2, i, h))
		for _, sz := range []string{"2048", "1048576"} {
			hp := d + "hugepages/hugepages-" + sz + "kB/"
			v := int64(0)
			if sz == "2048" {
				v = h
			}
			w(hp+"nr_hugepages", fmt.Sprintf("%d\n", v))
			w(hp+"free_hugepages", fmt.Sprintf("%d\n", v))
			w(hp+"surplus_hugepages", "0\n")
		}
	}
	if !l.noNodeDir {
		w("sys/devices/system/node/online", fmt.Sprintf("0-%d\n", nodes-1))
	}
	for _, sz := range []string{"2048", "1048576"} {
		hp := "sys/kernel/mm/hugepages/hugepages-" + sz + "kB/"
		v := int64(0)
		if sz == "2048" {
			v = totalHuge
		}
		w(hp+"nr_hugepages", fmt.Sprintf("%d\n", v))
		w(hp+"free_hugepages", fmt.Sprintf("%d\n", v))
		w(hp+"resv_hugepages", "0\n")
		w(hp+"surplus_hugepages", "0\n")
	}
	total := l.memPerNodeKB * int64(nodes)
	w("proc/meminfo", fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nHugePages_Total:    %d\nHugepagesize:       2048 kB\n", total, total/2, total*3/4, totalHuge))
	w("sys/kernel/mm/transparent_hugepage/enabled", l.thp+"\n")
	if l.numaBalancing != "" {
		w("proc/sys/kernel/numa_balancing", l.numaBalancing+"\n")
	}
	if l.governor != "" {
		w("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", l.governor+"\n")
	}
	w("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")
	w("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p1 ro\n")
	w("etc/os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	return root
}

func formatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

var layouts = map[string]layout{
	// This 2-vCPU VM: one node, no cpufreq, NUMA balancing off.
	"vm-1node": {model: "AMD EPYC", sockets: 1, coresPerSocket: 2, threads: 1, nodesPerSocket: 1,
		memPerNodeKB: 24 << 20, thp: "always [madvise] never", numaBalancing: "0"},
	// m6i.metal: 2 sockets x 32 cores x 2 threads, one node per socket, 512 GiB.
	"m6i-metal-2node": {model: "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", sockets: 2, coresPerSocket: 32, threads: 2, nodesPerSocket: 1,
		memPerNodeKB: 256 << 20, huge2M: []int64{1024, 1024}, governor: "performance", thp: "always madvise [never]", numaBalancing: "1",
		vendor: "Amazon EC2", product: "m6i.metal"},
	// r8i.metal-96xl with SNC3: 2 sockets x 96 cores x 2 threads, 3 nodes per socket, 3 TiB.
	"r8i-metal-96xl-snc3": {model: "Intel(R) Xeon(R) 6985P-C", sockets: 2, coresPerSocket: 96, threads: 2, nodesPerSocket: 3,
		memPerNodeKB: 512 << 20, huge2M: []int64{100, 0, 0, 0, 0, 7}, governor: "powersave", thp: "[always] madvise never", numaBalancing: "1",
		vendor: "Amazon EC2", product: "r8i.metal-96xl"},
	// A kernel without NUMA support: no node directories at all.
	"no-numa": {model: "Generic", sockets: 1, coresPerSocket: 4, threads: 2, nodesPerSocket: 1,
		memPerNodeKB: 8 << 20, thp: "", noNodeDir: true},
}

func TestReadGolden(t *testing.T) {
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			in, err := Read(writeTree(t, l))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got, err := json.MarshalIndent(in, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s mismatch:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
			// Structural checks independent of the golden file.
			if l.vendor != "" && in.InstanceType != l.product {
				t.Errorf("instance_type = %q, want %q", in.InstanceType, l.product)
			}
			if in.CPUs != l.cpus() {
				t.Errorf("cpus = %d, want %d", in.CPUs, l.cpus())
			}
			if want := l.sockets * l.coresPerSocket; in.Cores != want {
				t.Errorf("cores = %d, want %d", in.Cores, want)
			}
			if in.ThreadsPerCore != l.threads {
				t.Errorf("threads_per_core = %d, want %d", in.ThreadsPerCore, l.threads)
			}
			wantNodes := l.sockets * l.nodesPerSocket
			if l.noNodeDir {
				wantNodes = 1
			}
			if len(in.NUMANodes) != wantNodes {
				t.Fatalf("numa nodes = %d, want %d", len(in.NUMANodes), wantNodes)
			}
			wantDist := wantNodes
			if l.noNodeDir {
				wantDist = 0
			}
			if in.NUMACtl.Nodes != wantNodes || len(in.NUMACtl.NodeDistances) != wantDist {
				t.Errorf("numactl = %+v, want %d nodes and a %dx%[3]d distance matrix", in.NUMACtl, wantNodes, wantDist)
			}
			for i, row := range in.NUMACtl.NodeDistances {
				if len(row) != wantDist || row[i] != 10 {
					t.Errorf("distance row %d = %v, want %d entries with 10 at %d", i, row, wantDist, i)
				}
			}
			seen := map[int]bool{}
			for _, n := range in.NUMANodes {
				if len(n.CPUs) != l.cpus()/wantNodes {
					t.Errorf("node %d has %d cpus, want %d", n.ID, len(n.CPUs), l.cpus()/wantNodes)
				}
				for _, c := range n.CPUs {
					if seen[c] {
						t.Errorf("cpu %d in two nodes", c)
					}
					seen[c] = true
				}
			}
			if len(seen) != l.cpus() {
				t.Errorf("cpus over all nodes = %d, want %d", len(seen), l.cpus())
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0-1,64-65\n", []int{0, 1, 64, 65}, false},
		{"", []int{}, false},
		{"3-1", nil, true},
		{"a", nil, true},
	} {
		got, err := ParseCPUList(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseCPUList(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBracketedMode(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never": "madvise",
		"[always] madvise never": "always",
		"always madvise [never]": "never",
		"":                       Unsupported,
	} {
		if got := BracketedMode(in); got != want {
			t.Errorf("BracketedMode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadThisHost reads the real /proc and /sys.
func TestReadThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	in, err := Read("/")
	if err != nil {
		t.Fatalf("Read(/): %v", err)
	}
	if in.CPUs != runtime.NumCPU() {
		t.Errorf("cpus = %d, want %d", in.CPUs, runtime.NumCPU())
	}
	if in.MemoryTotalBytes <= 0 || len(in.NUMANodes) == 0 || len(in.HugePages) == 0 {
		t.Errorf("implausible host facts: %+v", in)
	}
}
