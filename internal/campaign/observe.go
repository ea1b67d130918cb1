package campaign

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pprof "github.com/google/pprof/profile"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/observe"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/profile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// Files of a run directory and of the campaign's profiles.
const (
	runPerfData    = "perf.data"
	runProfileFile = "profile.pb.gz"
	ProfilesDir    = "profiles"
)

// observation is what a measured run records beside pgbench: the OS and
// PostgreSQL counters at its start, the wait-event sampler and perf while
// it runs, and the CPU allowance of the pgbench process.
type observation struct {
	e   *engine
	vs  *variantState
	st  Step
	dir string

	osCfg observe.OSConfig
	os0   *observe.OSSnapshot
	pg0   *observe.PGSnapshot
	major int
	wait  *observe.Sampler
	perf  *profile.Recorder

	mu       sync.Mutex
	limitSet bool
	cpus     int
	quota    float64
}

// checkProfiling refuses a profiling campaign on a host where perf cannot
// record, before anything starts, and notes each variant's unwinding.
func (e *engine) checkProfiling(ctx context.Context) error {
	if !e.cfg.profiling() {
		return nil
	}
	if err := profile.Check(ctx); err != nil {
		return &UnmetError{fmt.Errorf("--profile %s: %w", e.cfg.Profile, err)}
	}
	return nil
}

// unwinding is how each variant's stacks are unwound, in variant order,
// distinct values joined: "fp", "dwarf" or "fp (stock), dwarf (patched)".
func (e *engine) unwinding(ctx context.Context) string {
	if !e.cfg.profiling() {
		return ""
	}
	var parts []string
	seen := map[string]bool{}
	for _, vs := range e.vars {
		if vs.unwind == "" {
			vs.unwind = profile.UnwindFor(ctx, vs.BinDir)
		}
		seen[vs.unwind] = true
		parts = append(parts, vs.unwind+" ("+vs.Name+")")
	}
	if len(seen) == 1 {
		return e.vars[0].unwind
	}
	return strings.Join(parts, ", ")
}

// observeStart takes the counters at the start of a measured run and
// starts what samples it; nil when the run records nothing.
func (e *engine) observeStart(ctx context.Context, vs *variantState, st Step, dir string) (*observation, error) {
	if !e.cfg.Counters && !st.Profiled {
		return nil, nil
	}
	o := &observation{e: e, vs: vs, st: st, dir: dir}
	if e.cfg.Counters {
		o.osCfg = observe.OSConfig{DataDir: vs.cluster.DataDir, ServerCPUs: e.serverCPUs()}
		var err error
		if vs.major == 0 {
			if vs.major, err = vs.cluster.Major(ctx); err != nil {
				return nil, fmt.Errorf("variant %s: %w", vs.Name, err)
			}
		}
		o.major = vs.major
		if err := waitClientsGone(ctx, vs); err != nil {
			return nil, err
		}
		if o.pg0, err = observe.ReadPG(ctx, vs.cluster.Psql, o.major); err != nil {
			return nil, fmt.Errorf("variant %s: PostgreSQL counters: %w", vs.Name, err)
		}
		if o.os0, err = observe.ReadOS(o.osCfg); err != nil {
			return nil, fmt.Errorf("OS counters: %w", err)
		}
		if e.cfg.WaitSampleInterval > 0 {
			o.wait, err = observe.StartSampler(ctx, observe.SamplerConfig{Interval: e.cfg.WaitSampleInterval, Start: psqlSession(vs)})
			if err != nil {
				return nil, fmt.Errorf("variant %s: wait-event sampler: %w", vs.Name, err)
			}
		}
	}
	if st.Profiled {
		pids, err := serverPids(vs.cluster.DataDir)
		if err != nil {
			o.abort()
			return nil, fmt.Errorf("variant %s: profile: %w", vs.Name, err)
		}
		if vs.unwind == "" {
			vs.unwind = profile.UnwindFor(ctx, vs.BinDir)
		}
		o.perf, err = profile.Start(ctx, profile.Options{Pids: pids, Output: filepath.Join(dir, runPerfData), Frequency: e.cfg.ProfileFrequency, Unwind: vs.unwind})
		if err != nil {
			o.abort()
			return nil, &UnmetError{fmt.Errorf("variant %s: perf record: %w", vs.Name, err)}
		}
	}
	return o, nil
}

// abort stops what observeStart started, after a failed run.
func (o *observation) abort() {
	if o == nil {
		return
	}
	if o.wait != nil {
		o.wait.Stop()
	}
	if o.perf != nil {
		o.perf.Stop()
	}
}

// clientStarted learns the pgbench process's CPU allowance once it runs
// under its pinning: a moment after it started, when numactl and any
// prefix have exec'ed into it.
func (o *observation) clientStarted(pid int) {
	if o == nil {
		return
	}
	delay := min(time.Second, o.e.cfg.Duration/4)
	go func() {
		time.Sleep(delay)
		cpus, quota, err := observe.ProcessLimit(pid)
		if err != nil {
			return
		}
		o.mu.Lock()
		o.limitSet, o.cpus, o.quota = true, cpus, quota
		o.mu.Unlock()
	}()
}

// finish takes the counters at the end of the run into r, the client's CPU
// use from the pgbench process's rusage, and the run's profile.
func (o *observation) finish(ctx context.Context, r *report.Run, client remote.Result) error {
	if o == nil {
		return nil
	}
	var perfErr error
	if o.perf != nil {
		perfErr = o.perf.Stop()
		o.perf = nil
	}
	if o.e.cfg.Counters {
		c := observe.Counters{}
		if o.wait != nil {
			w, err := o.wait.Stop()
			o.wait = nil
			if err != nil {
				o.e.warn("run %d (%s, %d clients): wait events: %v", o.st.Seq, o.st.Variant, o.st.Clients, err)
			}
			maps.Copy(c, w)
		}
		if err := waitClientsGone(ctx, o.vs); err != nil {
			return err
		}
		pg1, err := observe.ReadPG(ctx, o.vs.cluster.Psql, o.major)
		if err != nil {
			return fmt.Errorf("variant %s: PostgreSQL counters: %w", o.vs.Name, err)
		}
		os1, err := observe.ReadOS(o.osCfg)
		if err != nil {
			return fmt.Errorf("OS counters: %w", err)
		}
		maps.Copy(c, o.pg0.Delta(pg1))
		maps.Copy(c, o.os0.Delta(os1))
		if cs := o.e.client; cs != nil {
			if s := cs.takeOS(); s != nil {
				for k, v := range s.before.Delta(s.after) {
					c[ClientHostCounters+k] = v
				}
			} else {
				o.e.warn("run %d (%s, %d clients): the client host's OS counters did not come back", o.st.Seq, o.st.Variant, o.st.Clients)
			}
		}
		r.Counters = c
		r.Client = o.clientCPU(client)
		r.ClientBound = r.Client.Share >= report.ClientBoundShare
	}
	if r.Profiled = o.st.Profiled; r.Profiled {
		if perfErr != nil {
			return fmt.Errorf("variant %s: perf record: %w", o.vs.Name, perfErr)
		}
		data := filepath.Join(o.dir, runPerfData)
		p, err := profile.Convert(ctx, data, func(comm string) bool { return comm == "postgres" })
		if err != nil {
			return fmt.Errorf("variant %s: profile: %w", o.vs.Name, err)
		}
		if err := profile.WriteFile(filepath.Join(o.dir, runProfileFile), p); err != nil {
			return err
		}
		// The pprof file holds what perf.data does, symbolized; the raw
		// data is large and useless without this host's binaries.
		os.Remove(data)
		r.Profile = filepath.Join(r.LogDir, runProfileFile)
	}
	return nil
}

// clientCPU is pgbench's CPU time against what it may use: its threads,
// capped by the CPUs its affinity allows and its cgroup's quota when they
// could be read.
func (o *observation) clientCPU(res remote.Result) *report.ClientCPU {
	threads := o.e.cfg.threads(o.st.Clients)
	allowed := float64(threads)
	o.mu.Lock()
	if o.limitSet {
		if o.cpus > 0 {
			allowed = min(allowed, float64(o.cpus))
		}
		if o.quota > 0 && !math.IsInf(o.quota, 1) {
			allowed = min(allowed, o.quota)
		}
	}
	o.mu.Unlock()
	if cs := o.e.client; cs != nil && cs.facts.CPUs > 0 {
		allowed = min(allowed, float64(cs.facts.CPUs))
		if cs.pinnedCPUs > 0 {
			allowed = min(allowed, float64(cs.pinnedCPUs))
		}
	}
	u := observe.ClientUsage{
		CPUSeconds: (res.UserTime + res.SystemTime).Seconds(), WallSeconds: res.Duration.Seconds(),
		Threads: threads, AllowedCPUs: allowed,
	}
	return &report.ClientCPU{CPUSeconds: u.CPUSeconds, WallSeconds: u.WallSeconds, Threads: u.Threads, AllowedCPUs: u.AllowedCPUs, Share: u.Share()}
}

// serverCPUs are the CPUs the server's pinning allows; nil when unpinned.
func (e *engine) serverCPUs() []int {
	if e.cfg.ServerNUMA == "" {
		return nil
	}
	nodes := e.nodes
	if nodes == nil {
		nodes, _ = sysinfo.ReadNodes("/")
	}
	return slices.Sorted(maps.Keys(cpuSet(e.cfg.ServerNUMA, nodes)))
}

// waitClientsGone waits (up to 5 s) until no client backend but its own is
// connected: pgbench exits before its backends have, and a backend adds
// its statistics to pg_stat_database only as it leaves.
func waitClientsGone(ctx context.Context, vs *variantState) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := vs.cluster.Psql(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
		if err != nil {
			return fmt.Errorf("variant %s: %w", vs.Name, err)
		}
		if n, _ := strconv.Atoi(out); n == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// psqlSession runs a psql session on vs that reads SQL from stdin until it
// closes: the wait-event sampler's one connection.
func psqlSession(vs *variantState) func(ctx context.Context, stdin io.Reader, onLine func(string)) error {
	return func(ctx context.Context, stdin io.Reader, onLine func(string)) error {
		args := vs.cluster.PsqlArgs("")
		args = args[:len(args)-2] // no -c: the statements come from stdin
		cmd := vs.cluster.Command(nil, "psql", args...)
		cmd.Stdin, cmd.OnStdout = stdin, onLine
		_, err := vs.cluster.Run(ctx, cmd)
		return err
	}
}

// serverPids are the postmaster of dataDir and its descendants now: the
// processes perf follows (backends forked later are inherited).
func serverPids(dataDir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("the server is not running: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %q is not a pid", first)
	}
	return profile.Tree(pm)
}

// attachProfiles merges each variant's profiled runs per client count into
// profiles/c<N>-<variant>.pb.gz, draws the differential flame graph of each
// comparison, profiles/c<N>-<candidate>-vs-<baseline>.svg, and states the
// profiling's cost on TPS. A campaign without profiled runs is left alone.
func attachProfiles(ctx context.Context, dir string, res *report.Results) error {
	type key struct {
		clients int
		variant string
	}
	files := map[key][]string{}
	for _, r := range res.Runs {
		if r.Profiled && r.Profile != "" {
			k := key{r.Clients, r.Variant}
			files[k] = append(files[k], filepath.Join(dir, r.Profile))
		}
	}
	if len(files) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, ProfilesDir), 0o755); err != nil {
		return err
	}
	merged := map[key]*pprof.Profile{}
	for ci := range res.Cells {
		cell := &res.Cells[ci]
		for _, v := range res.Variants {
			k := key{cell.Clients, v.Name}
			if len(files[k]) == 0 {
				continue
			}
			var ps []*pprof.Profile
			for _, f := range files[k] {
				p, err := profile.ReadFile(f)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			p, err := pprof.Merge(ps)
			if err != nil {
				return fmt.Errorf("merge the profiles of %s at %d clients: %w", v.Name, cell.Clients, err)
			}
			rel := filepath.Join(ProfilesDir, fmt.Sprintf("c%d-%s.pb.gz", cell.Clients, v.Name))
			if err := profile.WriteFile(filepath.Join(dir, rel), p); err != nil {
				return err
			}
			merged[k] = p
			vc := cell.Variants[v.Name]
			vc.Profile = rel
			cell.Variants[v.Name] = vc
		}
		for i := range cell.Comparisons {
			c := &cell.Comparisons[i]
			base, cand := merged[key{cell.Clients, c.Baseline}], merged[key{cell.Clients, c.Candidate}]
			if base == nil || cand == nil {
				continue
			}
			rel := filepath.Join(ProfilesDir, fmt.Sprintf("c%d-%s-vs-%s.svg", cell.Clients, c.Candidate, c.Baseline))
			if err := writeFlameGraph(filepath.Join(dir, rel), base, cand, cell.Clients, c.Baseline, c.Candidate); err != nil {
				return err
			}
			c.FlameGraph = rel
		}
	}
	res.Workload.ProfileOverheadPct = profileOverhead(res)
	return nil
}

func writeFlameGraph(path string, base, cand *pprof.Profile, clients int, baseName, candName string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s vs %s, %d clients: widths from %s, red grew and blue shrank against %s", candName, baseName, clients, candName, baseName)
	werr := profile.WriteDiffFlameGraph(f, base, cand, title, baseName, candName)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("flame graph %s: %w", path, werr)
	}
	return nil
}

// profileOverhead is the median change of TPS, in percent, of the extra
// profiled runs against the median unprofiled TPS of their variant and
// cell; nil when every run is profiled or none is.
func profileOverhead(res *report.Results) *float64 {
	if res.Workload.Profile != ProfileOnePerCell {
		return nil
	}
	var logs []float64
	for _, r := range res.Runs {
		if !r.Profiled {
			continue
		}
		for _, cell := range res.Cells {
			if vc, ok := cell.Variants[r.Variant]; ok && cell.Clients == r.Clients && vc.MedianTPS > 0 {
				logs = append(logs, math.Log(r.TPS/vc.MedianTPS))
			}
		}
	}
	if len(logs) == 0 {
		return nil
	}
	slices.Sort(logs)
	m := logs[len(logs)/2]
	if len(logs)%2 == 0 {
		m = (logs[len(logs)/2-1] + logs[len(logs)/2]) / 2
	}
	pct := (math.Exp(m) - 1) * 100
	return &pct
}
