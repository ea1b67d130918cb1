// Package observe records what a measured run did besides its TPS: the
// OS's and PostgreSQL's counters as deltas over the run, the wait events of
// the active backends sampled while it ran, and the client's CPU use
// against what it may use. Names are stable: os.*, pg.*, wait.* (see each
// reader), so the report can compare them across variants.
package observe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Counters are a run's counters by name: deltas over the run, or shares
// (0 to 1) of samples for wait events.
type Counters map[string]float64

// userHZ is the unit of the times in /proc/stat (USER_HZ, 100 on every
// Linux architecture the runner is built for).
const userHZ = 100

// OSConfig says what ReadOS reads besides the machine-wide counters.
type OSConfig struct {
	// Root prefixes /proc and /sys; "" is "/" (tests use a fixture tree).
	Root string
	// ServerCPUs are the CPUs of the server's NUMA placement; their CPU
	// time is counted apart (os.server_cpu.*). nil: not pinned.
	ServerCPUs []int
	// DataDir is a path whose block device's I/O is counted (os.disk.*).
	DataDir string
}

// OSSnapshot is the OS counters at one moment.
type OSSnapshot struct {
	values Counters
	device string
}

// cpuFields are the /proc/stat columns, in order, and the kind each adds
// to: nice counts as user, irq and softirq as system; guest time is
// already inside user.
var cpuFields = []string{"user", "user", "system", "idle", "iowait", "system", "system", "steal"}

// ReadOS reads /proc/stat (CPU time by kind, machine-wide and over the
// server's CPUs; context switches), /proc/vmstat (page faults, NUMA
// placement), each node's numastat and the data directory's disk.
func ReadOS(cfg OSConfig) (*OSSnapshot, error) {
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	s := &OSSnapshot{values: Counters{}}
	if err := s.readStat(root, cfg.ServerCPUs); err != nil {
		return nil, err
	}
	if err := s.readVMStat(root); err != nil {
		return nil, err
	}
	s.readNumastat(root)
	if cfg.DataDir != "" {
		s.readDisk(root, cfg.DataDir)
	}
	return s, nil
}

// Device is the block device the disk counters are of ("sda1", "nvme0n1"),
// "" when the data directory is on none (tmpfs, overlay) or none was asked.
func (s *OSSnapshot) Device() string { return s.device }

// Delta is the counters of b minus those of a, for the names both have.
func (a *OSSnapshot) Delta(b *OSSnapshot) Counters {
	return delta(a.values, b.values)
}

func delta(a, b Counters) Counters {
	out := Counters{}
	for k, vb := range b {
		if va, ok := a[k]; ok {
			out[k] = vb - va
		}
	}
	return out
}

// ParseOS is the machine-wide counters of ReadOS from the text of
// /proc/stat and /proc/vmstat, as another host printed them.
func ParseOS(stat, vmstat []byte) (*OSSnapshot, error) {
	s := &OSSnapshot{values: Counters{}}
	if err := s.parseStat(bytes.NewReader(stat), "/proc/stat", nil); err != nil {
		return nil, err
	}
	s.parseVMStat(vmstat)
	return s, nil
}

func (s *OSSnapshot) readStat(root string, serverCPUs []int) error {
	path := filepath.Join(root, "proc/stat")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return s.parseStat(f, path, serverCPUs)
}

func (s *OSSnapshot) parseStat(r io.Reader, path string, serverCPUs []int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch name := fields[0]; {
		case name == "cpu":
			found = true
			addCPU(s.values, "os.cpu.", fields[1:])
		case strings.HasPrefix(name, "cpu"):
			n, err := strconv.Atoi(name[3:])
			if err == nil && slices.Contains(serverCPUs, n) {
				addCPU(s.values, "os.server_cpu.", fields[1:])
			}
		case name == "ctxt":
			v, _ := strconv.ParseFloat(fields[1], 64)
			s.values["os.context_switches"] = v
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if !found {
		return fmt.Errorf("%s has no cpu line", path)
	}
	return nil
}

// addCPU adds one /proc/stat cpu line's times, in seconds, to v under
// prefix: user_s, system_s, idle_s, iowait_s, steal_s.
func addCPU(v Counters, prefix string, ticks []string) {
	// Every kind is there, at 0 on a kernel whose line is shorter.
	for _, kind := range []string{"user", "system", "idle", "iowait", "steal"} {
		if _, ok := v[prefix+kind+"_s"]; !ok {
			v[prefix+kind+"_s"] = 0
		}
	}
	for i, t := range ticks {
		if i >= len(cpuFields) {
			break
		}
		n, err := strconv.ParseFloat(t, 64)
		if err != nil {
			continue
		}
		v[prefix+cpuFields[i]+"_s"] += n / userHZ
	}
}

// vmstatKeys are the /proc/vmstat counters a run records.
var vmstatKeys = []string{"pgfault", "pgmajfault", "numa_hit", "numa_miss", "numa_foreign", "numa_local", "numa_other", "numa_interleave", "pswpin", "pswpout"}

func (s *OSSnapshot) readVMStat(root string) error {
	path := filepath.Join(root, "proc/vmstat")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	s.parseVMStat(b)
	return nil
}

func (s *OSSnapshot) parseVMStat(b []byte) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(vmstatKeys, k) {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			s.values["os.vmstat."+k] = n
		}
	}
}

// readNumastat reads each NUMA node's numastat: os.node<N>.numa_hit and
// the rest. A machine without /sys/devices/system/node has none.
func (s *OSSnapshot) readNumastat(root string) {
	nodes, _ := filepath.Glob(filepath.Join(root, "sys/devices/system/node/node[0-9]*"))
	for _, dir := range nodes {
		b, err := os.ReadFile(filepath.Join(dir, "numastat"))
		if err != nil {
			continue
		}
		node := filepath.Base(dir)
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			if n, err := strconv.ParseFloat(f[1], 64); err == nil {
				s.values["os."+node+"."+f[0]] = n
			}
		}
	}
}

// readDisk finds the block device holding dataDir through its device
// number (/sys/dev/block/MAJ:MIN) and reads its line of /proc/diskstats.
// Nothing is recorded when there is no such device.
func (s *OSSnapshot) readDisk(root, dataDir string) {
	major, minor, ok := deviceOf(dataDir)
	if !ok || major == 0 {
		return // tmpfs, overlay and other devices without a disk
	}
	link, err := os.Readlink(filepath.Join(root, "sys/dev/block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return
	}
	name := filepath.Base(link)
	b, err := os.ReadFile(filepath.Join(root, "proc/diskstats"))
	if err != nil {
		return
	}
	s.readDiskstats(string(b), name)
}

// readDiskstats records the /proc/diskstats line of device name: reads,
// sectors read, time reading (ms), writes, sectors written, time writing.
func (s *OSSnapshot) readDiskstats(diskstats, name string) {
	for _, line := range strings.Split(diskstats, "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[2] != name {
			continue
		}
		num := func(i int) float64 { n, _ := strconv.ParseFloat(f[i], 64); return n }
		s.values["os.disk.reads"] = num(3)
		s.values["os.disk.sectors_read"] = num(5)
		s.values["os.disk.read_ms"] = num(6)
		s.values["os.disk.writes"] = num(7)
		s.values["os.disk.sectors_written"] = num(9)
		s.values["os.disk.write_ms"] = num(10)
		s.device = name
		return
	}
}
