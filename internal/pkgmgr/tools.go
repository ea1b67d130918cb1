package pkgmgr

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Tools are the tools the runner can install by name, whatever the
// packages are called on the host.
var Tools = []string{"perf", "numactl", "ccache"}

// ToolPackages are the packages that provide tool on a host of family f.
// osRelease is the content of /etc/os-release (Ubuntu ships perf per
// kernel, in linux-tools-<release>) and kernel the running kernel's
// release (uname -r).
func ToolPackages(f Family, osRelease, kernel, tool string) ([]string, error) {
	switch tool {
	case "perf":
		if f == RPM {
			return []string{"perf"}, nil
		}
		if osID(osRelease) == "ubuntu" {
			return []string{"linux-tools-common", "linux-tools-" + kernel}, nil
		}
		return []string{"linux-perf"}, nil
	case "numactl", "ccache":
		return []string{tool}, nil
	}
	return nil, fmt.Errorf("unknown tool %q: want one of %s", tool, strings.Join(Tools, ", "))
}

// HostToolPackages is ToolPackages for this machine.
func HostToolPackages(f Family, tool string) ([]string, error) {
	rel, _ := os.ReadFile("/etc/os-release")
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return ToolPackages(f, string(rel), strings.TrimSpace(string(kernel)), tool)
}

// osID is the ID= of an os-release file, unquoted.
func osID(osRelease string) string {
	for _, l := range strings.Split(osRelease, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ID="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// appendNew appends the names of add not yet in list.
func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}

// WithTools is pkgs plus the packages of each tool on this machine's
// family f.
func WithTools(f Family, pkgs, tools []string) ([]string, error) {
	out := slices.Clone(pkgs)
	for _, t := range tools {
		p, err := HostToolPackages(f, t)
		if err != nil {
			return nil, err
		}
		out = appendNew(out, p...)
	}
	return out, nil
}
