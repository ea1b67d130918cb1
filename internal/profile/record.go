package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
)

// Defaults of Options.
const (
	DefaultFrequency = 499 // samples per second: odd, so it does not beat with timers
	DefaultEvent     = "cpu-clock"
	// dwarfStack is the bytes of user stack copied per sample for DWARF
	// unwinding: enough for PostgreSQL's executor recursion, and it keeps
	// perf.data at about 8 MB per second of one busy CPU.
	dwarfStack = 16384
)

// Options say what to record and how.
type Options struct {
	// Pids are the processes to record: the postmaster and its current
	// children (Tree gives them). perf's inheritance (on by default for -p)
	// also records the children they fork after perf attached: the
	// backends of new connections (checked by TestRecordPostgres).
	Pids      []int
	Output    string // perf.data path; an existing file is replaced
	Frequency int    // samples per second, default DefaultFrequency
	Unwind    string // UnwindFP or UnwindDWARF
	Event     string // default DefaultEvent (a VM without a hardware PMU has only software events)
	// Perf is the perf binary; "" looks it up in PATH, then DefaultPerf.
	Perf string
}

// args is the perf command line (without the program) for o, defaults applied.
func (o Options) args() ([]string, error) {
	if len(o.Pids) == 0 {
		return nil, errors.New("perf record: no pids to record")
	}
	if o.Output == "" {
		return nil, errors.New("perf record: no output path")
	}
	freq, event := o.Frequency, o.Event
	if freq == 0 {
		freq = DefaultFrequency
	}
	if freq < 0 {
		return nil, fmt.Errorf("perf record: frequency %d is not positive", freq)
	}
	if event == "" {
		event = DefaultEvent
	}
	var callGraph string
	switch o.Unwind {
	case UnwindFP:
		callGraph = UnwindFP
	case UnwindDWARF:
		callGraph = fmt.Sprintf("%s,%d", UnwindDWARF, dwarfStack)
	default:
		return nil, fmt.Errorf("perf record: unwind %q is neither %q nor %q", o.Unwind, UnwindFP, UnwindDWARF)
	}
	pids := make([]string, len(o.Pids))
	for i, p := range o.Pids {
		if p <= 0 {
			return nil, fmt.Errorf("perf record: pid %d is not valid", p)
		}
		pids[i] = strconv.Itoa(p)
	}
	// --no-buildid-cache: perf would otherwise copy every binary it saw
	// (postgres is 10 MB) into ~/.debug at each recording. --control: Start
	// pings perf on fd 3 and waits for the ack on fd 4 (see start).
	return []string{"record", "-e", event, "-F", strconv.Itoa(freq), "--call-graph", callGraph,
		"--no-buildid-cache", "--control", "fd:3,4", "-p", strings.Join(pids, ","), "-o", o.Output}, nil
}

// Recorder is a perf record running in the background; Stop ends it.
type Recorder struct {
	cmd    *exec.Cmd
	ctl    *os.File // perf's control fd, open while it runs
	output string
	stderr bytes.Buffer
	done   chan struct{} // closed when perf has exited
	err    error         // Wait's error, set before done is closed
	once   sync.Once
	stop   error
}

// attachTimeout bounds how long Start waits for perf to attach.
const attachTimeout = 15 * time.Second

// stopTimeout bounds how long Stop waits for perf to write perf.data.
const stopTimeout = 2 * time.Minute

// Start starts perf record of o.Pids in the background and returns once
// perf has opened its events and written the perf.data header, so that
// what the caller runs next is recorded. A backend may exit between the
// caller's listing and perf's attaching, which perf refuses ("No such
// process"): pids that are gone are dropped and perf is started again.
// perf runs in its own process group and dies with this process;
// cancelling ctx stops it as Stop does.
func Start(ctx context.Context, o Options) (*Recorder, error) {
	if _, err := o.args(); err != nil {
		return nil, err
	}
	perf, err := findPerf(o.Perf)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		o.Pids = alive(o.Pids)
		r, err := start(ctx, perf, o)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "No such process") {
			return r, err
		}
	}
}

// alive are the pids that still exist; all of them when none does, so that
// perf reports the error.
func alive(pids []int) []int {
	var live []int
	for _, p := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return pids
	}
	return live
}

func start(ctx context.Context, perf string, o Options) (*Recorder, error) {
	args, err := o.args()
	if err != nil {
		return nil, err
	}
	// perf would rename an existing file to .old; a stale header must not
	// pass for a fresh one either.
	if err := os.Remove(o.Output); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("perf record: remove old %s: %w", o.Output, err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Output), 0o755); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	// perf answers a ping on its control fd only from its main loop, that
	// is after it has opened the events and written the comm and mmap
	// records of the processes already running. Until then a fork is not
	// attributed: the perf.data header alone is not enough (a backend forked
	// right after it was written had no command name and no mappings).
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("perf record: control pipe: %w", err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("perf record: ack pipe: %w", err)
	}
	defer ackR.Close()
	r := &Recorder{output: o.Output, done: make(chan struct{}), ctl: ctlW}
	r.cmd = exec.CommandContext(ctx, perf, args...)
	r.cmd.Cancel = func() error { return r.cmd.Process.Signal(os.Interrupt) }
	r.cmd.WaitDelay = stopTimeout
	r.cmd.Stderr = &r.stderr
	r.cmd.ExtraFiles = []*os.File{ctlR, ackW} // fd 3 and 4
	proc.Start(r.cmd, nil)
	err = r.cmd.Start()
	ctlR.Close()
	ackW.Close()
	if err != nil {
		ctlW.Close()
		return nil, fmt.Errorf("start %s: %w", perf, err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	fail := func(format string, a ...any) (*Recorder, error) {
		r.Stop()
		return nil, fmt.Errorf("perf %s: %s: %s", strings.Join(args, " "), fmt.Sprintf(format, a...), tail(r.stderr.String(), 600))
	}
	if _, err := ctlW.WriteString("ping\n"); err != nil {
		return fail("write ping to its control fd: %v", err)
	}
	ackR.SetReadDeadline(time.Now().Add(attachTimeout))
	buf := make([]byte, 16)
	n, err := ackR.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "ack") {
		select {
		case <-r.done:
			return fail("exited before recording (%v)", r.err)
		default:
		}
		return fail("no ack to a ping within %v (%q, %v)", attachTimeout, buf[:n], err)
	}
	return r, nil
}

// Output is the perf.data path being written.
func (r *Recorder) Output() string { return r.output }

// Stop sends perf SIGINT and waits until it has written perf.data
// completely. It may be called more than once; later calls return the first
// result.
func (r *Recorder) Stop() error {
	r.once.Do(func() { r.stop = r.finish() })
	return r.stop
}

func (r *Recorder) finish() error {
	defer r.ctl.Close()
	select {
	case <-r.done:
	default:
		r.cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.done:
		case <-time.After(stopTimeout):
			r.cmd.Process.Kill()
			<-r.done
			return fmt.Errorf("perf record did not finish %v after SIGINT, killed: %s", stopTimeout, tail(r.stderr.String(), 600))
		}
	}
	// perf record re-raises the SIGINT it stopped on once perf.data is
	// written, so death by SIGINT is its normal end.
	if r.err != nil && !interrupted(r.err) {
		return fmt.Errorf("perf record: %w: %s", r.err, tail(r.stderr.String(), 600))
	}
	if !strings.Contains(r.stderr.String(), "Captured and wrote") {
		return fmt.Errorf("perf record ended without writing %s: %s", r.output, tail(r.stderr.String(), 600))
	}
	return nil
}

// interrupted says whether err is perf's exit on SIGINT.
func interrupted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGINT
	}
	return ee.ExitCode() == 128+int(syscall.SIGINT)
}

// Tree returns pid and all its current descendants, read from /proc,
// sorted: the processes of a server given its postmaster's pid.
func Tree(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("process tree of %d: %w", pid, err)
	}
	children := map[int][]int{}
	found := false
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, err := parentOf(p)
		if err != nil {
			continue // exited meanwhile
		}
		if p == pid {
			found = true
		}
		children[ppid] = append(children[ppid], p)
	}
	if !found {
		return nil, fmt.Errorf("process tree of %d: no such process", pid)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	sort.Ints(tree)
	return tree, nil
}

// parentOf reads the ppid from /proc/pid/stat; the command name in
// parentheses may itself hold spaces and parentheses.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.Atoi(f[1])
}
