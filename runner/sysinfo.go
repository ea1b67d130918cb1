package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

type sysinfoCmd struct{}

func init() { register(sysinfoCmd{}) }

func (sysinfoCmd) Name() string { return "sysinfo" }
func (sysinfoCmd) Synopsis() string {
	return "print host facts: CPUs, NUMA nodes, memory, huge pages, kernel knobs"
}

func (c sysinfoCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	root := fs.String("root", "/", "read /proc and /sys under this directory")
	_ = fs.MarkHidden("root")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	in, err := sysinfo.Read(*root)
	if err != nil {
		return o.emit(nil, fmt.Errorf("read host facts: %w", err), nil)
	}
	if *root == "/" {
		// numactl describes the running host, so it only cross-checks the real root.
		crossCheckNumactl(ctx, &in.NUMACtl)
	}
	return o.emit(in, nil, func(w io.Writer) {
		fmt.Fprintf(w, "cpus:            %d (%d cores, %d threads per core, %d sockets)\n", in.CPUs, in.Cores, in.ThreadsPerCore, in.Sockets)
		fmt.Fprintf(w, "cpu model:       %s\n", in.CPUModel)
		fmt.Fprintf(w, "memory:          %s total, %s available\n", sizeString(in.MemoryTotalBytes), sizeString(in.MemoryAvailableBytes))
		for _, n := range in.NUMANodes {
			fmt.Fprintf(w, "numa node %d:     %d cpus, %s\n", n.ID, len(n.CPUs), sizeString(n.MemoryBytes))
		}
		for _, p := range in.HugePages {
			fmt.Fprintf(w, "huge pages %s: total %d, free %d, reserved %d, surplus %d\n", sizeString(p.SizeBytes), p.Total, p.Free, p.Reserved, p.Surplus)
		}
		if in.NUMACtl.Warning != "" {
			fmt.Fprintf(w, "numactl:         %s\n", in.NUMACtl.Warning)
		}
		fmt.Fprintf(w, "thp:             %s\n", in.THP)
		fmt.Fprintf(w, "numa balancing:  %s\n", in.NUMABalancing)
		fmt.Fprintf(w, "governor:        %s\n", in.Governor)
		fmt.Fprintf(w, "kernel:          %s\n", in.Kernel)
		fmt.Fprintf(w, "os:              %s\n", in.OS)
		fmt.Fprintf(w, "boot cmdline:    %s\n", in.BootCmdline)
	})
}

// crossCheckNumactl runs `numactl --hardware` where it is installed and
// compares it with sysfs. A failure is recorded as a warning, not an error:
// sysfs already gave the facts.
func crossCheckNumactl(ctx context.Context, c *sysinfo.NUMACtl) {
	path, err := exec.LookPath("numactl")
	if err != nil {
		return
	}
	res, err := remote.RunLocal(ctx, remote.Command{Args: []string{path, "--hardware"}}, remote.LocalOptions{})
	if err != nil {
		c.Warning = err.Error()
		return
	}
	hw, err := sysinfo.ParseNumactlHardware(string(res.Stdout))
	if err != nil {
		c.Warning = err.Error()
		return
	}
	c.CrossCheck(hw)
}

// sizeString prints a byte count in binary units.
func sizeString(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	v := float64(b) / float64(div)
	suffix := "KMGTP"[exp : exp+1]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %sB", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %sB", v, suffix)
}
