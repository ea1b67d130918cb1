package profile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/pprof/profile"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
)

// scriptFields are the fields Convert asks perf script for; parseScript
// reads exactly this layout:
//
//	postgres 10089/10089  2221.989966:    2004008
//		          5af6fb hash_search_with_hash_value+0xbb (/usr/lib/postgresql/15/bin/postgres)
//		          44085d [unknown] (/usr/lib/postgresql/15/bin/postgres)
const scriptFields = "comm,pid,tid,time,period,ip,sym,symoff,dso"

// Convert reads perf.data through `perf script` and returns a pprof profile:
// sample types samples/count and cpu/nanoseconds (the period), one Location
// per (function, mapping), functions named by symbol, stacks leaf-first.
// A frame perf could not symbolize is named by its DSO and function start
// ("postgres+0x1b6740", from the DSO's .eh_frame_hdr) or, failing that,
// by the DSO alone ("[postgres]"); frames in no DSO at all (a broken
// frame-pointer chain) are dropped. keep filters samples by command name;
// nil keeps all. A perf.data with no sample kept is an error.
func Convert(ctx context.Context, perfData string, keep func(comm string) bool) (*profile.Profile, error) {
	return ConvertWith(ctx, "", perfData, keep)
}

// ConvertWith is Convert with the perf binary given ("" looks it up).
func ConvertWith(ctx context.Context, perf, perfData string, keep func(comm string) bool) (*profile.Profile, error) {
	perf, err := findPerf(perf)
	if err != nil {
		return nil, err
	}
	// --no-inline: inline frames come from debug info, which Debian's
	// binaries do not have, and resolving them doubles perf script's time
	// on DWARF data. -f: perf.data written by root may be read by another user.
	cmd := exec.CommandContext(ctx, perf, "script", "-f", "--no-inline", "-F", scriptFields, "-i", perfData)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	proc.Start(cmd, nil)
	cmd.Cancel = func() error { return proc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script %s: %w", perfData, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s script: %w", perf, err)
	}
	p, perr := parseScript(out, keep, newUnknownNamer().name)
	if perr != nil {
		io.Copy(io.Discard, out) // let perf finish rather than die of SIGPIPE
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("perf script %s: %w", perfData, ctx.Err())
	}
	if werr != nil {
		return nil, fmt.Errorf("perf script %s: %w: %s", perfData, werr, tail(stderr.String(), 600))
	}
	if perr != nil {
		return nil, fmt.Errorf("perf script %s: %w", perfData, perr)
	}
	return p, nil
}

var (
	// "comm pid/tid time: period"; comm may hold spaces.
	sampleHeader = regexp.MustCompile(`^(.*?)\s+(\d+)/(\d+)\s+(\d+)\.(\d+):\s+(\d+)\s*$`)
	// "addr sym+0xoff (dso)"; sym may hold spaces and parentheses (C++).
	frameLine = regexp.MustCompile(`^\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)$`)
	symOffset = regexp.MustCompile(`\+0x[0-9a-f]+$`)
)

// nameUnknown names a frame perf left [unknown]: dso, address (file offset)
// and whether it is the sample's leaf.
type nameUnknown func(dso string, addr uint64, leaf bool) string

// builder accumulates a pprof profile from perf samples.
type builder struct {
	p         *profile.Profile
	mappings  map[string]*profile.Mapping
	functions map[[2]string]*profile.Function
	locations map[[2]string]*profile.Location
}

func newBuilder() *builder {
	return &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		},
		mappings:  map[string]*profile.Mapping{},
		functions: map[[2]string]*profile.Function{},
		locations: map[[2]string]*profile.Location{},
	}
}

// location returns the one Location of function name in dso.
func (b *builder) location(name, dso string) *profile.Location {
	key := [2]string{name, dso}
	if l := b.locations[key]; l != nil {
		return l
	}
	m := b.mappings[dso]
	if m == nil {
		// HasFunctions: pprof must not try to symbolize these again.
		m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: dso, HasFunctions: true}
		b.mappings[dso] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	f := b.functions[key]
	if f == nil {
		f = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
		b.functions[key] = f
		b.p.Function = append(b.p.Function, f)
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: f}}}
	b.locations[key] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// parseScript reads perf script output in the scriptFields layout.
func parseScript(r io.Reader, keep func(comm string) bool, unknown nameUnknown) (*profile.Profile, error) {
	ps := &scriptParser{b: newBuilder(), keep: keep, unknown: unknown, dropped: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		var err error
		switch {
		case strings.TrimSpace(line) == "":
			ps.cur, ps.inSample = nil, false
		case line[0] != ' ' && line[0] != '\t':
			err = ps.header(line)
		default:
			err = ps.frame(line, lineNo)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ps.finish()
}

// scriptParser is the state of parseScript between lines.
type scriptParser struct {
	b       *builder
	keep    func(comm string) bool
	unknown nameUnknown
	// cur is the sample the frames go to: nil between samples and for
	// samples not kept.
	cur         *profile.Sample
	inSample    bool
	total       int
	first, last int64 // sample times, ns
	periods     []int64
	// badFrame is the first line that is not a frame, reported once the
	// rest has parsed.
	badFrame error
	dropped  map[string]int // samples not kept, by command
}

// header starts a sample: its command, pid, time and period.
func (ps *scriptParser) header(line string) error {
	m := sampleHeader.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("not a sample header: %q", line)
	}
	ps.inSample = true
	ps.total++
	comm := m[1]
	pid, _ := strconv.ParseInt(m[2], 10, 64)
	sec, _ := strconv.ParseInt(m[4], 10, 64)
	frac := m[5]
	for len(frac) < 9 {
		frac += "0"
	}
	ns, _ := strconv.ParseInt(frac[:9], 10, 64)
	t := sec*1e9 + ns
	if ps.total == 1 || t < ps.first {
		ps.first = t
	}
	if t > ps.last {
		ps.last = t
	}
	period, err := strconv.ParseInt(m[6], 10, 64)
	if err != nil {
		return fmt.Errorf("period %q: %w", m[6], err)
	}
	if ps.keep != nil && !ps.keep(comm) {
		ps.dropped[comm]++
		ps.cur = nil
		return nil
	}
	ps.cur = &profile.Sample{
		Value:    []int64{1, period},
		Label:    map[string][]string{"comm": {comm}},
		NumLabel: map[string][]int64{"pid": {pid}},
	}
	ps.b.p.Sample = append(ps.b.p.Sample, ps.cur)
	ps.periods = append(ps.periods, period)
	return nil
}

// frame adds one stack frame to the current sample.
func (ps *scriptParser) frame(line string, lineNo int) error {
	if !ps.inSample {
		return fmt.Errorf("frame outside a sample: %q", line)
	}
	if ps.cur == nil {
		return nil
	}
	m := frameLine.FindStringSubmatch(line)
	if m == nil {
		if ps.badFrame == nil {
			ps.badFrame = fmt.Errorf("line %d: not a frame: %q", lineNo, line)
		}
		return nil
	}
	addr, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		return fmt.Errorf("address %q: %w", m[1], err)
	}
	sym, dso := symOffset.ReplaceAllString(m[2], ""), m[3]
	if dso == "[unknown]" {
		return nil // no mapping: garbage from a broken frame-pointer chain
	}
	if sym == "[unknown]" || sym == "" {
		sym = ps.unknown(dso, addr, len(ps.cur.Location) == 0)
	}
	ps.cur.Location = append(ps.cur.Location, ps.b.location(sym, dso))
	return nil
}

// finish is the profile of the samples kept, with the median period and
// the time from the first sample to the last.
func (ps *scriptParser) finish() (*profile.Profile, error) {
	if ps.badFrame != nil {
		return nil, ps.badFrame
	}
	if len(ps.b.p.Sample) == 0 {
		var comms []string
		for c, n := range ps.dropped {
			comms = append(comms, fmt.Sprintf("%q %d", c, n))
		}
		sort.Strings(comms)
		return nil, fmt.Errorf("no samples kept of %d (filtered out: %s)", ps.total, strings.Join(comms, ", "))
	}
	sort.Slice(ps.periods, func(i, j int) bool { return ps.periods[i] < ps.periods[j] })
	ps.b.p.Period = ps.periods[len(ps.periods)/2]
	ps.b.p.DurationNanos = ps.last - ps.first
	return ps.b.p, nil
}

// WriteFile writes p as gzip'd protobuf (.pb.gz), what `go tool pprof` reads.
func WriteFile(path string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("write profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write profile %s: %w", path, err)
	}
	return nil
}

// ReadFile reads a profile WriteFile (or any pprof producer) wrote.
func ReadFile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return p, nil
}

// Func is one function's share of all samples: Flat where it is the leaf
// (self time), Cum where it is anywhere on the stack. Shares are 0..1.
type Func struct {
	Name      string
	Flat, Cum float64
}

// Top returns the n functions with the most flat (self) samples, ties
// broken by cumulative samples, then name. Shares count samples (the
// "samples" value, or the first one when a profile has none so named).
func Top(p *profile.Profile, n int) []Func {
	vi := sampleIndex(p)
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[vi]
		total += v
		seen := map[string]bool{}
		for i, l := range s.Location {
			for j, ln := range l.Line {
				if ln.Function == nil {
					continue
				}
				name := ln.Function.Name
				if i == 0 && j == 0 {
					flat[name] += v
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	if total == 0 {
		return nil
	}
	fs := make([]Func, 0, len(cum))
	for name, c := range cum {
		fs = append(fs, Func{Name: name, Flat: float64(flat[name]) / float64(total), Cum: float64(c) / float64(total)})
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Flat != fs[j].Flat {
			return fs[i].Flat > fs[j].Flat
		}
		if fs[i].Cum != fs[j].Cum {
			return fs[i].Cum > fs[j].Cum
		}
		return fs[i].Name < fs[j].Name
	})
	if n >= 0 && len(fs) > n {
		fs = fs[:n]
	}
	return fs
}

// sampleIndex is the index of the "samples" value of p, else 0.
func sampleIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			return i
		}
	}
	return 0
}
