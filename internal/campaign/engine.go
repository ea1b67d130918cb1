package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hugepages"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

// SysinfoFile is the host facts document written next to the results.
const SysinfoFile = "sysinfo.json"

// UnmetError is a host that lacks what the campaign needs (numactl for
// pinning, huge pages for a huge_pages=on variant).
type UnmetError struct{ Err error }

func (e *UnmetError) Error() string { return e.Err.Error() }
func (e *UnmetError) Unwrap() error { return e.Err }

type variantState struct {
	Variant
	cluster  *pgctl.Cluster
	settings map[string]string
	version  string
	observed string
	// unwind is how perf unwinds this variant's stacks (profile.UnwindFor);
	// major its PostgreSQL major version, once the counters asked for it.
	unwind string
	major  int
}

type engine struct {
	cfg        *Config
	emit       func(Event)
	vars       []*variantState
	byName     map[string]*variantState
	running    *variantState
	serverWrap []string
	clientWrap []string
	warnings   []string
	journal    *Journal
	// lengths holds the decided length of each cell, by client count.
	lengths map[int]int
	// nodes overrides the host's NUMA nodes for the overlap check (tests).
	nodes []sysinfo.Node
	// recentTPS is the TPS of the last pgbench run of this process at each
	// client count, measured or warm-up: what sizes the auto sampling rate.
	recentTPS map[int]float64
	// host is the host's lock while the campaign holds it: shared while it
	// loads data, exclusive while it measures.
	host     *hostlock.Lock
	hostMode hostlock.Mode
	// client is the client host, for a campaign with one; cellRTT the
	// round trip to it measured before each cell, by client count.
	client  *clientSide
	cellRTT map[int]float64
}

func (e *engine) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.warnings = append(e.warnings, msg)
	e.emit(Event{Event: EventWarning, Message: msg})
}

func (e *engine) phase(format string, args ...any) {
	e.emit(Event{Event: EventPhase, Message: fmt.Sprintf(format, args...)})
}

// Execute runs the campaign: it prepares the data directories, runs every
// planned step not already in the journal, and writes the reports into
// OutDir. onEvent (may be nil) receives progress. On cancel it stops pgbench
// and the server, keeps the journal, and returns an error wrapping
// ctx.Err().
func Execute(ctx context.Context, cfg *Config, onEvent func(Event)) (*report.Results, error) {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	start := time.Now()
	e, err := newEngine(ctx, cfg, onEvent)
	if err != nil {
		return nil, err
	}
	defer e.closeClient()
	if cfg.ClientHost != "" {
		if err := e.connectClient(ctx); err != nil {
			return nil, err
		}
	}
	closeOut, err := e.openOut()
	if err != nil {
		return nil, err
	}
	defer closeOut()
	defer func() {
		// Stop the server whatever happened, even after a cancel, and
		// only then let another measurement have the host.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
		defer cancel()
		e.stopRunning(stopCtx)
		e.releaseHost()
	}()
	steps := cfg.Plan()
	if err := e.setUp(ctx, steps); err != nil {
		return nil, wrapCtx(ctx, err)
	}
	done, err := e.measure(ctx, steps)
	if err != nil {
		return nil, wrapCtx(ctx, err)
	}
	res, err := e.finish(ctx, start, done)
	if err != nil {
		return nil, wrapCtx(ctx, err)
	}
	return res, nil
}

// newEngine checks cfg, defaults applied, on its own and against the host,
// and returns the engine that runs it, with its NUMA pinning and its
// profiler checked.
func newEngine(ctx context.Context, cfg *Config, onEvent func(Event)) (*engine, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckHost(); err != nil {
		return nil, err
	}
	e := &engine{cfg: cfg, emit: onEvent, byName: map[string]*variantState{}}
	if err := e.pin(); err != nil {
		return nil, err
	}
	if err := e.checkProfiling(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// openOut takes the campaign directory: it locks it, then takes a
// randomized order's seed from its journal when none is given, and opens
// the journal. The lock comes before the journal is read, seed included.
// closeOut closes the journal and lets go of the directory.
func (e *engine) openOut() (closeOut func(), err error) {
	cfg := e.cfg
	if err := mkdirReachable(cfg.OutDir); err != nil {
		return nil, err
	}
	release, err := lockOut(cfg.OutDir)
	if err != nil {
		return nil, err
	}
	if cfg.Order == OrderRandomized && !cfg.SeedSet {
		if s, ok := readSeed(cfg.OutDir); ok && !cfg.Fresh {
			cfg.Seed = s
		} else {
			cfg.Seed = time.Now().UnixNano()
		}
	}
	e.journal, err = openJournal(cfg.OutDir, cfg.definition(), cfg.Fresh, time.Now().UTC())
	if err != nil {
		release()
		return nil, err
	}
	return func() {
		e.journal.Close()
		release()
	}, nil
}

// setUp readies the variants for steps: their servers' settings, their
// versions and, when a step is left to run, their data directories; then
// it takes the host for measuring.
func (e *engine) setUp(ctx context.Context, steps []Step) error {
	cfg := e.cfg
	maxClients := 0
	for _, c := range cfg.Clients {
		maxClients = max(maxClients, c)
	}
	for _, v := range cfg.Variants {
		vs := &variantState{Variant: v, settings: cfg.settingsFor(v), observed: "unknown"}
		e.clientSettings(vs.settings)
		if o, ok := e.journal.HugePages[v.Name]; ok {
			vs.observed = o
		}
		if _, ok := vs.settings["max_connections"]; !ok && maxClients+10 > 100 {
			vs.settings["max_connections"] = strconv.Itoa(maxClients + 10)
		}
		vs.cluster = clusterFor(cfg, vs)
		vs.cluster.Wrap = e.serverWrap
		e.vars = append(e.vars, vs)
		e.byName[v.Name] = vs
	}
	e.lengths = map[int]int{}
	for _, clients := range cfg.Clients {
		e.decide(clients)
	}
	missing := e.count(steps, true)
	for i, vs := range e.vars {
		if err := e.version(ctx, vs); err != nil {
			return err
		}
		e.checkClientVersion(vs)
		// A finished campaign only rebuilds its reports: no data needed.
		if missing == 0 {
			continue
		}
		if err := mkdirReachable(cfg.DataDir); err != nil {
			return err
		}
		if err := e.prepare(ctx, i, vs); err != nil {
			return err
		}
	}
	if missing == 0 {
		return nil
	}
	// The server a load left running would sit beside another campaign's
	// measurement while this one waits for the host: it stops, and the
	// first run starts (and warms up) its own.
	if err := e.stopRunning(ctx); err != nil {
		return err
	}
	return e.holdHost(ctx, hostlock.Exclusive, "measuring")
}

// measure runs, in order, every step of steps that is neither in the
// journal nor past its cell's decided length, and returns how many it ran.
func (e *engine) measure(ctx context.Context, steps []Step) (done int, err error) {
	// The ETA counts from here: the wait for the host is not the pace.
	runStart := time.Now()
	var prev *Step
	for i, st := range steps {
		if r, ok := e.journal.Runs[st.Seq]; ok {
			if r.Variant != st.Variant || r.Clients != st.Clients || r.Iteration != st.Iteration {
				return done, fmt.Errorf("journal run %d is %s c%d i%d, the plan says %s c%d i%d", st.Seq, r.Variant, r.Clients, r.Iteration, st.Variant, st.Clients, st.Iteration)
			}
			e.emit(Event{Event: EventRunSkipped, Seq: st.Seq, Total: e.count(steps, false), Variant: st.Variant, Clients: st.Clients, Iteration: st.Iteration, TPS: ptr(r.TPS), NOPM: nopmPtr(r)})
			prev = &steps[i]
			continue
		}
		if e.beyond(st) {
			continue
		}
		r, ran, err := e.measureOrReplace(ctx, steps, i, prev)
		if err != nil {
			return done, err
		}
		prev = &steps[i]
		done += ran
		// The ETA counts undecided adaptive cells at their maximum, so it
		// only shortens as cells decide.
		elapsed := time.Since(runStart).Seconds()
		remaining := e.count(steps[i+1:], true)
		e.emit(Event{Event: EventRunDone, Seq: st.Seq, Total: e.count(steps, false), Variant: st.Variant, Clients: st.Clients, Iteration: st.Iteration,
			TPS: ptr(r.TPS), NOPM: nopmPtr(*r), Seconds: ptr(r.Seconds), ElapsedSeconds: ptr(elapsed), ETASeconds: ptr(elapsed / float64(done) * float64(remaining))})
	}
	return done, nil
}

// finish ends a campaign that ran done steps: it checks TPC-C datasets,
// stops the server, lets go of the host, and writes the reports.
func (e *engine) finish(ctx context.Context, start time.Time, done int) (*report.Results, error) {
	// A TPC-C campaign that ran anything checks its datasets afterwards:
	// a driver or server that broke them broke the measurement too.
	if e.cfg.tpcc() && done > 0 {
		if err := e.finalChecks(ctx); err != nil {
			return nil, err
		}
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	err := e.stopRunning(stopCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	e.releaseHost()
	res, err := e.results(ctx, start)
	if err != nil {
		return nil, err
	}
	e.emit(Event{Event: EventDone, WallSeconds: ptr(time.Since(start).Seconds())})
	return res, nil
}

// holdHost takes the host's lock in mode (see internal/hostlock), after
// releasing a hold in the other mode, and reports the wait as
// EventWaiting events.
func (e *engine) holdHost(ctx context.Context, mode hostlock.Mode, doing string) error {
	if e.host != nil && e.hostMode == mode {
		return nil
	}
	e.releaseHost()
	who, err := filepath.Abs(e.cfg.OutDir)
	if err != nil {
		who = e.cfg.OutDir
	}
	l, err := hostlock.Acquire(ctx, hostlock.Holder{Who: "campaign " + who, Doing: doing, Mode: mode}, hostlock.Waiting{
		Limit: e.cfg.WaitHost,
		Report: func(w hostlock.Wait) {
			e.emit(Event{Event: EventWaiting, Message: w.Describe(), ElapsedSeconds: ptr(w.Waited.Seconds())})
		},
	})
	if err != nil {
		return err
	}
	e.host, e.hostMode = l, mode
	return nil
}

// releaseHost lets go of the host's lock, if held.
func (e *engine) releaseHost() {
	e.host.Release()
	e.host = nil
}

// decide records the length of the cell at clients once its first stage is
// in the journal (at once for a fixed campaign), and says so for an
// adaptive one.
func (e *engine) decide(clients int) {
	if _, done := e.lengths[clients]; done {
		return
	}
	n, need, ok := e.cfg.cellLength(e.journal.Runs, clients)
	if !ok {
		return
	}
	e.lengths[clients] = n
	if !e.cfg.IterationsAuto {
		return
	}
	if need > n {
		e.warn("%d clients: the first %d pairs ask for %d iterations to reach ±%g%%; the cell stops at %s %d, with a wider interval",
			clients, e.cfg.MinIterations, need, e.cfg.TargetCIPct, ref("max-iterations"), n)
		return
	}
	e.phase("%d clients: %d iterations reach ±%g%% (from the spread of the first %d pairs)", clients, n, e.cfg.TargetCIPct, e.cfg.MinIterations)
}

// beyond says st lies past its cell's decided length.
func (e *engine) beyond(st Step) bool {
	n, ok := e.lengths[st.Clients]
	return ok && st.Iteration > n
}

// count is the number of steps the campaign runs, or with pending only
// those not yet in the journal; undecided cells count at their maximum.
func (e *engine) count(steps []Step, pending bool) int {
	n := 0
	for _, st := range steps {
		if _, ran := e.journal.Runs[st.Seq]; (ran && pending) || (!ran && e.beyond(st)) {
			continue
		}
		n++
	}
	return n
}

// mkdirReachable makes d and lets the PostgreSQL user (initdb, pgbench)
// reach the directories under it.
func mkdirReachable(d string) error {
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", d, err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return fmt.Errorf("chmod %s: %w", d, err)
	}
	return nil
}

func clusterFor(cfg *Config, vs *variantState) *pgctl.Cluster {
	return &pgctl.Cluster{BinDir: vs.BinDir, DataDir: filepath.Join(cfg.DataDir, vs.Name)}
}

func wrapCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	return err
}

// version records what `postgres --version` of the variant prints.
func (e *engine) version(ctx context.Context, vs *variantState) error {
	res, err := remote.RunLocal(ctx, remote.Command{Args: []string{filepath.Join(vs.BinDir, "postgres"), "--version"}}, remote.LocalOptions{})
	if err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	vs.version = strings.TrimSpace(string(res.Stdout))
	return nil
}

// prepare makes variant i's data directory ready: reuse a stamped dataset,
// clone the first variant's, or initdb and load.
func (e *engine) prepare(ctx context.Context, i int, vs *variantState) error {
	c := vs.cluster
	if err := stopStale(ctx, c.DataDir); err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	sp := stampPath(e.cfg.DataDir, vs.Name)
	if st, err := readStamp(sp); err == nil && isDataDir(c.DataDir) {
		if err := e.cfg.guardDataset(vs, st); err != nil {
			return err
		}
		if st.Version == vs.version && st.BinDir == vs.BinDir && e.cfg.sameDataset(st) {
			e.phase("reuse %s dataset (%s, loaded %s)", vs.Name, e.cfg.datasetWanted(), st.LoadedAt.Format(time.RFC3339))
			return renderConf(c, vs.settings)
		}
	}
	// Loading (or cloning) keeps the machine busy: never beside another
	// campaign's measured runs.
	if err := e.holdHost(ctx, hostlock.Shared, "loading"); err != nil {
		return err
	}
	os.Remove(sp)
	if err := removeDataDir(c.DataDir); err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	e.phase("initdb %s", vs.Name)
	if err := c.InitDB(ctx); err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	cat, err := c.CatalogVersion(ctx)
	if err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	stamp := &Stamp{BinDir: vs.BinDir, Version: vs.version, CatalogVersion: cat}
	e.cfg.stampWorkload(stamp)
	if i > 0 && e.cfg.Clone {
		first := e.vars[0]
		fst, err := readStamp(stampPath(e.cfg.DataDir, first.Name))
		if err == nil && fst.CatalogVersion == cat {
			e.phase("clone %s from %s (catalog version %s)", vs.Name, first.Name, cat)
			// A consistent copy needs the source stopped.
			if err := e.stopRunning(ctx); err != nil {
				return err
			}
			if err := removeDataDir(c.DataDir); err != nil {
				return err
			}
			if err := copyDir(ctx, first.cluster.DataDir, c.DataDir); err != nil {
				return fmt.Errorf("variant %s: %w", vs.Name, err)
			}
			if err := renderConf(c, vs.settings); err != nil {
				return fmt.Errorf("variant %s: %w", vs.Name, err)
			}
			stamp.ClonedFrom, stamp.LoadedAt = first.Name, time.Now().UTC()
			stamp.Bytes, stamp.LoadCheck = fst.Bytes, fst.LoadCheck
			return writeStamp(sp, stamp)
		}
		if err == nil {
			e.warn("cannot clone %s from %s: catalog versions differ (%s vs %s); loading it", vs.Name, first.Name, cat, fst.CatalogVersion)
		}
	}
	if err := renderConf(c, vs.settings); err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	if err := e.ensure(ctx, vs); err != nil {
		return err
	}
	if e.cfg.tpcc() {
		if err := e.loadTPCC(ctx, vs, stamp); err != nil {
			return err
		}
	} else {
		e.phase("load %s: pgbench -i -s %d", vs.Name, e.cfg.Scale)
		var res remote.Result
		var err error
		if e.client != nil {
			_, _, res, err = e.clientPgbench(ctx, vs, pgbench.InitArgs(e.cfg.Scale), "")
		} else {
			res, err = c.Run(ctx, c.Command(nil, "pgbench", append(pgbench.InitArgs(e.cfg.Scale), e.connArgs(vs)...)...))
		}
		if err != nil {
			return fmt.Errorf("variant %s: load with pgbench -i -s %d: %w", vs.Name, e.cfg.Scale, shortStderr(err, res))
		}
	}
	if _, err := c.Psql(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("variant %s: checkpoint after load: %w", vs.Name, err)
	}
	stamp.LoadedAt = time.Now().UTC()
	return writeStamp(sp, stamp)
}

func (e *engine) connArgs(vs *variantState) []string {
	return []string{"-h", vs.cluster.SocketDir(), "-U", "postgres", "postgres"}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// ensure makes vs the one running server, stopping any other first so
// variants never compete for the machine.
func (e *engine) ensure(ctx context.Context, vs *variantState) error {
	if e.running == vs {
		return nil
	}
	if err := e.stopRunning(ctx); err != nil {
		return err
	}
	return e.start(ctx, vs)
}

func (e *engine) stopRunning(ctx context.Context) error {
	if e.running == nil {
		return nil
	}
	// running clears only once the server stopped: a stop that failed
	// (a cancelled context, say) leaves it to the deferred stop of
	// Execute, which runs on a context of its own.
	if err := e.running.cluster.Stop(ctx); err != nil {
		return fmt.Errorf("variant %s: %w", e.running.Name, err)
	}
	e.running = nil
	return nil
}

// start starts vs and checks that huge_pages=on really got its segment
// from the pool: no silent fallback.
func (e *engine) start(ctx context.Context, vs *variantState) error {
	pool := hugepages.ReadCounters()
	if err := e.openToClient(vs); err != nil {
		return err
	}
	if err := vs.cluster.Start(ctx); err != nil {
		var he *pgctl.HugePagesError
		if errors.As(err, &he) {
			return &UnmetError{fmt.Errorf("variant %s: huge_pages=on but the huge-page pool cannot hold its shared memory (HugePages_Total=%d, HugePages_Free=%d, HugePages_Rsvd=%d); reserve a pool first (pgbench-runner hugepages): %w", vs.Name, pool.Total, pool.Free, pool.Reserved, err)}
		}
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	e.running = vs
	observed, err := hugepages.ServerStatus(ctx, vs.cluster)
	if err != nil {
		observed = "unknown"
		e.warn("variant %s: cannot tell whether the server uses huge pages: %v", vs.Name, err)
	}
	if vs.HugePages == "on" && observed == "off" {
		return &UnmetError{fmt.Errorf("variant %s: huge_pages=on but the server's shared memory is not in huge pages", vs.Name)}
	}
	if vs.observed != "unknown" && observed != "unknown" && vs.observed != observed {
		e.warn("variant %s: huge pages were %s at one start and %s at another", vs.Name, vs.observed, observed)
	}
	vs.observed = observed
	if e.journal != nil {
		if err := e.journal.RecordHugePages(vs.Name, observed); err != nil {
			return err
		}
	}
	return e.admitClient(ctx, vs)
}

// runStep executes one measured run.
func (e *engine) runStep(ctx context.Context, st Step, prev *Step) (*report.Run, error) {
	vs := e.byName[st.Variant]
	start := e.running != vs || e.cfg.startsServer(st, prev)
	if start {
		if err := e.stopRunning(ctx); err != nil {
			return nil, err
		}
		if err := e.start(ctx, vs); err != nil {
			return nil, err
		}
	}
	rel := filepath.Join("runs", fmt.Sprintf("%04d-%s-c%d-i%d", st.Seq, st.Variant, st.Clients, st.Iteration))
	if st.Iteration == 0 {
		rel = filepath.Join("runs", fmt.Sprintf("%04d-%s-c%d-profile", st.Seq, st.Variant, st.Clients))
	}
	dir := filepath.Join(e.cfg.OutDir, rel)
	// A run cut short by a crash left its directory behind: start clean.
	os.RemoveAll(dir)
	if err := mkdirFor(dir); err != nil {
		return nil, err
	}
	// A server just started runs slower at first (cold shared buffers and
	// caches): its first measured run follows an unrecorded warm-up.
	if start && e.cfg.Warmup > 0 {
		if err := e.warmup(ctx, vs, st, dir); err != nil {
			return nil, fmt.Errorf("variant %s: warmup: %w", vs.Name, err)
		}
	}
	if err := e.measureRTT(ctx, vs, st.Clients); err != nil {
		return nil, err
	}
	if e.cfg.CheckpointBefore {
		if _, err := vs.cluster.Psql(ctx, "CHECKPOINT"); err != nil {
			return nil, fmt.Errorf("variant %s: checkpoint: %w", vs.Name, err)
		}
	}
	ob, err := e.observeStart(ctx, vs, st, dir)
	if err != nil {
		return nil, err
	}
	started := time.Now().UTC()
	var r *report.Run
	var client remote.Result
	if e.cfg.tpcc() {
		var rr *tpcc.RunResult
		if rr, client, err = e.runTPCC(ctx, vs, st, e.cfg.Duration, dir, "", ob.clientStarted); err == nil {
			r = tpccRun(rr)
		}
	} else {
		r, client, err = e.pgbenchRun(ctx, vs, st, dir, ob.clientStarted)
	}
	if err != nil {
		ob.abort()
		return nil, err
	}
	r.Seq, r.Variant, r.Clients, r.Iteration, r.StartedAt, r.LogDir = st.Seq, st.Variant, st.Clients, st.Iteration, started, rel
	r.NetworkRTTMS = e.cellRTT[st.Clients]
	if r.Seconds == 0 {
		r.Seconds = client.Duration.Seconds()
	}
	if err := ob.finish(ctx, r, client); err != nil {
		return nil, err
	}
	if !e.cfg.tpcc() {
		e.summarizeLogs(r, st, dir)
	}
	return r, nil
}

// warmup is the unrecorded run after a server start.
func (e *engine) warmup(ctx context.Context, vs *variantState, st Step, dir string) error {
	if e.cfg.tpcc() {
		_, _, err := e.runTPCC(ctx, vs, st, e.cfg.Warmup, dir, "warmup.", nil)
		return err
	}
	w := e.cfg.runOptions(st.Clients)
	w.Duration = e.cfg.Warmup
	wout, _, _, err := e.pgbench(ctx, vs, w.Args(), dir, "warmup.", nil)
	if err != nil {
		return err
	}
	if o, err := pgbench.ParseOutput(wout); err == nil {
		e.noteTPS(st.Clients, o.TPS)
	}
	return nil
}

// pgbenchRun is the measured pgbench run of a step: its output parsed,
// the client's process result beside it.
func (e *engine) pgbenchRun(ctx context.Context, vs *variantState, st Step, dir string, onStart func(int)) (*report.Run, remote.Result, error) {
	opts := e.measuredRun(st.Clients, dir)
	if err := opts.Validate(); err != nil {
		return nil, remote.Result{}, err
	}
	stdout, stderrText, client, err := e.pgbench(ctx, vs, opts.Args(), dir, "", onStart)
	if err != nil {
		return nil, client, fmt.Errorf("variant %s, %d clients, iteration %d: %w", vs.Name, st.Clients, st.Iteration, err)
	}
	outp, err := pgbench.ParseOutput(stdout + "\n" + stderrText)
	if err != nil {
		return nil, client, fmt.Errorf("variant %s, %d clients, iteration %d: %w; stderr: %s", vs.Name, st.Clients, st.Iteration, err, tail(stderrText, 4))
	}
	e.noteTPS(st.Clients, outp.TPS)
	return &report.Run{
		TPS: outp.TPS, Seconds: client.Duration.Seconds(),
		LatencyMS:    report.Latency{Avg: outp.LatencyAvgMS, Stddev: outp.LatencyStddevMS},
		Transactions: outp.Transactions, FailedTransactions: outp.Failed, PgbenchVersion: outp.Version,
		SamplingRate: opts.SamplingRate,
	}, client, nil
}

// summarizeLogs reads a pgbench run's per-transaction log into r (latency
// percentiles, the per-second series and its drift), then compresses it.
func (e *engine) summarizeLogs(r *report.Run, st Step, dir string) {
	if ls, err := summarizeRunLogs(dir); err == nil {
		r.LatencyMS.P50, r.LatencyMS.P95, r.LatencyMS.P99 = ls.P50, ls.P95, ls.P99
		r.LoggedTransactions = ls.Count
		r.TPSSeries = ls.TPSSeries
		d := pgbench.DriftTrend(ls.TPSSeries)
		r.DriftPct, r.Drift = d.Pct, d.Drifting
	} else {
		e.warn("run %d (%s, %d clients): no latency percentiles: %v", st.Seq, st.Variant, st.Clients, err)
	}
	// Summarized: the raw log is kept, compressed, for whoever wants to
	// look again (pgbench.SummarizeLogs reads it as it is).
	if files, err := pgbench.LogFiles(dir, logPrefix); err == nil {
		if _, _, err := pgbench.CompressLogs(files); err != nil {
			e.warn("run %d (%s, %d clients): %v", st.Seq, st.Variant, st.Clients, err)
		}
	}
}

// measuredRun is the pgbench run of a measured step at a client count,
// logging a sample of its transactions into dir: the latency percentiles
// and the per-second TPS series both come from that log (see
// pgbench.LogSummary). It is the one place these arguments are built, so
// BenchmarkHarnessOverhead measures what a campaign runs.
func (e *engine) measuredRun(clients int, dir string) pgbench.RunOptions {
	o := e.cfg.runOptions(clients)
	o.LogPrefix = filepath.Join(dir, logPrefix)
	o.SamplingRate = samplingRate(e.cfg.SamplingRate, e.expectedTPS(clients), e.cfg.Duration, e.cfg.maxLogLines())
	return o
}

// expectedTPS is the most recent TPS seen at a client count, any variant:
// this process's last run there, or else the journal's last; 0 for none.
func (e *engine) expectedTPS(clients int) float64 {
	if tps, ok := e.recentTPS[clients]; ok {
		return tps
	}
	if e.journal != nil {
		return latestTPS(e.journal.Runs, clients)
	}
	return 0
}

// noteTPS records the TPS of a pgbench run at a client count, measured or
// warm-up, for the sampling rate of the runs after it.
func (e *engine) noteTPS(clients int, tps float64) {
	if !(tps > 0) {
		return
	}
	if e.recentTPS == nil {
		e.recentTPS = map[int]float64{}
	}
	e.recentTPS[clients] = tps
}

// logPrefix names the per-transaction log files in a run directory.
const logPrefix = "pgbench_log"

func summarizeRunLogs(dir string) (*pgbench.LogSummary, error) {
	files, err := pgbench.LogFiles(dir, logPrefix)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pgbench logs %s.* in %s", logPrefix, dir)
	}
	return pgbench.SummarizeLogs(files)
}

// pgbench runs pgbench against vs as the PostgreSQL user, under the client
// pinning. With dir set, its command line, stdout and stderr are kept there
// (file names prefixed with name). onStart (may be nil) gets the pid of
// the pgbench process; the Result carries its wall and CPU time.
func (e *engine) pgbench(ctx context.Context, vs *variantState, args []string, dir, name string, onStart func(pid int)) (stdout, stderrText string, res remote.Result, err error) {
	if e.client != nil {
		return e.clientPgbenchKept(ctx, vs, args, dir, name)
	}
	wrap := append(append([]string{}, e.cfg.ClientPrefix...), e.clientWrap...)
	cmd := vs.cluster.Command(wrap, "pgbench", append(args, e.connArgs(vs)...)...)
	cmd.OnStart = onStart
	if dir != "" {
		fo, ferr := os.Create(filepath.Join(dir, name+"stdout"))
		if ferr != nil {
			return "", "", remote.Result{}, fmt.Errorf("create %s: %w", dir, ferr)
		}
		defer fo.Close()
		fe, ferr := os.Create(filepath.Join(dir, name+"stderr"))
		if ferr != nil {
			return "", "", remote.Result{}, fmt.Errorf("create %s: %w", dir, ferr)
		}
		defer fe.Close()
		cmd.OnStdout = func(line string) { fmt.Fprintln(fo, line) }
		cmd.OnStderr = func(line string) { fmt.Fprintln(fe, line) }
		os.WriteFile(filepath.Join(dir, name+"command"), []byte(strings.Join(cmd.Args, " ")+"\n"), 0o644)
	}
	res, err = vs.cluster.Run(ctx, cmd)
	stdout, stderrText = string(res.Stdout), string(res.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return stdout, stderrText, res, ctx.Err()
		}
		return stdout, stderrText, res, shortStderr(err, res)
	}
	return stdout, stderrText, res, nil
}

// shortStderr keeps only the last lines of stderr in the error of a command
// that exited non-zero: its whole output is kept elsewhere or is noise.
func shortStderr(err error, res remote.Result) error {
	var ee *remote.ExitError
	if errors.As(err, &ee) {
		ee.Stderr = tail(string(res.Stderr), 6)
	}
	return err
}

// results assembles results.json from the journal and writes every report.
func (e *engine) results(ctx context.Context, start time.Time) (*report.Results, error) {
	cfg := e.cfg
	var runs []report.Run
	for _, r := range e.journal.Runs {
		runs = append(runs, r)
	}
	var variants []report.Variant
	for _, vs := range e.vars {
		variants = append(variants, report.Variant{
			Name: vs.Name, BinDir: vs.BinDir, Version: vs.version, BuildKey: pgbuild.StampedBuildKey(vs.BinDir), Settings: vs.settings,
			HugePages: vs.HugePages, HugePagesObserved: vs.observed, DataDir: vs.cluster.DataDir,
		})
	}
	res, err := summarize(cfg.definition(), variants, runs, cfg.Alpha)
	if err != nil {
		return nil, err
	}
	reportReplacements(res, e.journal.Replaced)
	now := time.Now().UTC()
	res.StartedAt = e.journal.StartedAt
	res.FinishedAt = now
	res.WallSeconds = now.Sub(e.journal.StartedAt).Seconds()
	res.Command = cfg.reproduceCommand()
	res.Workload.Unwind = e.unwinding(ctx)
	if cfg.tpcc() {
		res.Workload.TPCC = e.tpccDatasets()
	}
	if err := attachProfiles(ctx, cfg.OutDir, res); err != nil {
		return nil, err
	}
	res.Warnings = append(append([]string{}, e.warnings...), res.Warnings...)
	if e.client != nil {
		res.Client = &e.client.facts
	}
	facts := cfg.HostFacts
	if facts == nil {
		facts = func(context.Context) (any, error) { return sysinfo.Read("/") }
	}
	if info, err := facts(ctx); err == nil {
		res.Sysinfo = info
		b, _ := json.MarshalIndent(info, "", "  ")
		if err := os.WriteFile(filepath.Join(cfg.OutDir, SysinfoFile), append(b, '\n'), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", SysinfoFile, err)
		}
	} else {
		res.Warnings = append(res.Warnings, "host facts unavailable: "+err.Error())
	}
	if err := report.WriteAll(cfg.OutDir, res); err != nil {
		return nil, fmt.Errorf("write reports: %w", err)
	}
	return res, nil
}
