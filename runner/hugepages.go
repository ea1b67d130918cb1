package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/spf13/pflag"
)

type hugepagesCmd struct{}

func init() { register(hugepagesCmd{}) }

func (hugepagesCmd) Name() string { return "hugepages" }
func (hugepagesCmd) Synopsis() string {
	return "plan|reserve|release|status the huge-page pool (reserve verifies and rolls back a shortfall)"
}

func (hugepagesCmd) Actions() []string { return slices.Sorted(maps.Keys(hugepagesFlags)) }

func (c hugepagesCmd) Run(ctx context.Context, args []string) error {
	action := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	var o output
	fs := newFlagSet(c.Name()+" "+orDefault(action, "plan|reserve|release|status"), c.Synopsis(), &o)
	var a hugepagesArgs
	a.bind(fs)
	takes, known := hugepagesFlags[action]
	if known {
		// --help of an action lists only what it takes.
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name != "json" && !slices.Contains(takes, f.Name) {
				fs.MarkHidden(f.Name)
			}
		})
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if known {
		if err := foreignFlags(fs, action, takes); err != nil {
			return o.emit(nil, err, nil)
		}
	}
	size, err := hugepages.ParsePageSize(a.pageSize)
	if err != nil {
		return o.emit(nil, usagef("--page-size: %v", err), nil)
	}
	switch action {
	case "plan":
		return c.runPlan(ctx, &o, a, size)
	case "reserve":
		return c.runReserve(&o, fs, a, size)
	case "release":
		return c.runRelease(&o, a)
	case "status":
		return c.runStatus(&o)
	case "":
		return o.emit(nil, usagef("hugepages needs an action: plan, reserve, release or status"), nil)
	default:
		return o.emit(nil, usagef("unknown hugepages action %q: want plan, reserve, release or status", action), nil)
	}
}

// hugepagesArgs are the flags of every hugepages action.
type hugepagesArgs struct {
	pages      int64
	fraction   float64
	forPG      string
	sets       []string
	pageSize   string
	node       int
	state      string
	persist    bool
	overcommit bool
	ratio      int
}

func (a *hugepagesArgs) bind(fs *pflag.FlagSet) {
	fs.Int64Var(&a.pages, "pages", 0, "number of huge pages (plan, reserve)")
	fs.Float64Var(&a.fraction, "memory-fraction", 0, "plan: size the pool to this fraction of memory (the seed uses 0.25)")
	fs.StringVar(&a.forPG, "for-postgres", "", "plan: PostgreSQL bin dir to ask for its shared memory segment size")
	fs.StringArrayVar(&a.sets, "set", nil, "plan --for-postgres: a setting k=v (repeatable), e.g. shared_buffers=32GB")
	fs.StringVar(&a.pageSize, "page-size", "2MB", "huge page size: 2MB or 1GB")
	fs.IntVar(&a.node, "node", -1, "reserve on this NUMA node only")
	fs.StringVar(&a.state, "state", "", "state file recording what reserve changed (reserve, release)")
	fs.BoolVar(&a.persist, "persist", false, "reserve: also write vm.nr_hugepages to /etc/sysctl.d so the pool is reserved at boot")
	fs.BoolVar(&a.overcommit, "overcommit", false, "reserve: set vm.overcommit_memory=2 with --overcommit-ratio of the memory left outside the pool")
	fs.IntVar(&a.ratio, "overcommit-ratio", 90, "reserve --overcommit: vm.overcommit_ratio (percent of memory outside the pool)")
}

// foreignFlags is the usage error for flags given that action does not take.
func foreignFlags(fs *pflag.FlagSet, action string, takes []string) error {
	var foreign []string
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "json" && !slices.Contains(takes, f.Name) {
			foreign = append(foreign, "--"+f.Name)
		}
	})
	if len(foreign) > 0 {
		return usagef("%s does not apply to hugepages %s (it takes %s)", strings.Join(foreign, ", "), action, flagList(takes))
	}
	return nil
}

func (c hugepagesCmd) runPlan(ctx context.Context, o *output, a hugepagesArgs, size int64) error {
	p, err := c.plan(ctx, a.pages, a.fraction, a.forPG, a.sets, size)
	return o.emit(p, err, func(w io.Writer) {
		fmt.Fprintf(w, "%d pages of %s = %s (%.1f%% of memory), %s left outside the pool\n",
			p.Pages, hugepages.SizeName(p.PageSizeBytes), sizeString(p.Bytes), p.MemoryFractionOfTotal*100, sizeString(p.RemainingBytes))
		if p.SharedMemorySizeBytes > 0 {
			fmt.Fprintf(w, "PostgreSQL shared memory segment: %s\n", sizeString(p.SharedMemorySizeBytes))
		}
	})
}

func (hugepagesCmd) runReserve(o *output, fs *pflag.FlagSet, a hugepagesArgs, size int64) error {
	if !fs.Changed("pages") || a.pages < 0 {
		return o.emit(nil, usagef("reserve needs --pages N"), nil)
	}
	if a.state == "" {
		return o.emit(nil, usagef("reserve needs --state FILE so release can undo it"), nil)
	}
	opts := hugepages.ReserveOptions{Pages: a.pages, PageSize: size, Node: a.node, StateFile: a.state, Persist: a.persist}
	if a.overcommit {
		if a.ratio < 1 || a.ratio > 100 {
			return o.emit(nil, usagef("--overcommit-ratio %d: want 1..100", a.ratio), nil)
		}
		opts.OvercommitRatio = a.ratio
	}
	r, err := hugepages.Kernel{}.Reserve(opts)
	return o.emit(r, err, func(w io.Writer) {
		fmt.Fprintf(w, "huge pages of %s: requested %d, total %d, free %d (was %d)\n", hugepages.SizeName(size), r.Requested, r.Total, r.Free, r.Previous)
	})
}

func (hugepagesCmd) runRelease(o *output, a hugepagesArgs) error {
	if a.state == "" {
		return o.emit(nil, usagef("release needs --state FILE"), nil)
	}
	r, err := hugepages.Kernel{}.Release(a.state)
	return o.emit(r, err, func(w io.Writer) {
		if r.NoState {
			fmt.Fprintf(w, "nothing to release: no state file at %s (huge pages of %s: total %d, free %d)\n", a.state, hugepages.SizeName(r.PageSizeBytes), r.Total, r.Free)
			return
		}
		fmt.Fprintf(w, "huge pages of %s: back to %d (was %d)\n", hugepages.SizeName(r.PageSizeBytes), r.Total, r.Previous)
	})
}

func (hugepagesCmd) runStatus(o *output) error {
	pools, err := hugepages.Kernel{}.Status()
	if err != nil {
		return o.emit(nil, fmt.Errorf("read huge page pools: %w", err), nil)
	}
	nodes, err := sysinfo.ReadNodes("/")
	st := status{Pools: pools, Nodes: []nodePools{}}
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, nodePools{ID: n.ID, Pools: n.HugePages})
	}
	return o.emit(st, err, func(w io.Writer) {
		for _, p := range pools {
			fmt.Fprintf(w, "%s: total %d, free %d, reserved %d, surplus %d\n", hugepages.SizeName(p.SizeBytes), p.Total, p.Free, p.Reserved, p.Surplus)
		}
		for _, n := range st.Nodes {
			for _, p := range n.Pools {
				fmt.Fprintf(w, "node %d %s: total %d, free %d\n", n.ID, hugepages.SizeName(p.SizeBytes), p.Total, p.Free)
			}
		}
	})
}

// hugepagesFlags are the flags each action takes, besides --json; any other
// is a usage error rather than silently ignored.
var hugepagesFlags = map[string][]string{
	"plan":    {"pages", "memory-fraction", "for-postgres", "set", "page-size"},
	"reserve": {"pages", "page-size", "node", "state", "persist", "overcommit", "overcommit-ratio"},
	"release": {"state"},
	"status":  {},
}

func flagList(names []string) string {
	if len(names) == 0 {
		return "only --json"
	}
	return "--" + strings.Join(names, ", --") + " and --json"
}

// status is the JSON of `pgbench-runner hugepages status --json`.
type status struct {
	Pools []sysinfo.HugePool `json:"hugepages"`
	Nodes []nodePools        `json:"numa_nodes"`
}

type nodePools struct {
	ID    int                `json:"id"`
	Pools []sysinfo.HugePool `json:"hugepages"`
}

func (hugepagesCmd) plan(ctx context.Context, pages int64, fraction float64, forPG string, sets []string, size int64) (hugepages.Plan, error) {
	n := 0
	for _, set := range []bool{pages > 0, fraction > 0, forPG != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return hugepages.Plan{}, usagef("plan needs exactly one of --pages N, --memory-fraction F, --for-postgres BIN_DIR")
	}
	if len(sets) > 0 && forPG == "" {
		return hugepages.Plan{}, usagef("--set only applies with --for-postgres")
	}
	mem, err := sysinfo.ParseMeminfo("/proc/meminfo")
	if err != nil {
		return hugepages.Plan{}, err
	}
	total := mem["MemTotal"]
	switch {
	case pages > 0:
		return hugepages.PlanPages(pages, size, total), nil
	case fraction > 0:
		p, err := hugepages.PlanFraction(fraction, size, total)
		if err != nil {
			return p, usagef("--memory-fraction: %v", err)
		}
		return p, nil
	}
	settings := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return hugepages.Plan{}, usagef("--set %q: want name=value", s)
		}
		settings[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return hugepages.PlanForPostgres(ctx, forPG, settings, size, total)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
