// Package tune applies and reverts OS knobs that matter for benchmarks:
// automatic NUMA balancing, the CPU frequency governor and transparent huge
// pages. Apply records the previous values in a state file first; Revert
// writes exactly those back.
package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/statefile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

// Knob names.
const (
	NUMABalancing = "numa_balancing"
	Governor      = "governor"
	THP           = "thp"
)

// Status values in a Change.
const (
	Applied     = "applied"
	Unchanged   = "unchanged"
	Unsupported = "unsupported"
	Reverted    = "reverted"
)

// Change is one knob in the JSON of `tune apply|revert --json`.
type Change struct {
	Knob     string `json:"knob"`
	Previous string `json:"previous,omitempty"`
	Value    string `json:"value,omitempty"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
}

// Result is the JSON of `tune apply|revert --json`.
type Result struct {
	Changes []Change `json:"changes"`
	// NoState is set by Revert when the state file did not exist, so there
	// was nothing to restore (a repeated revert or a retried destroy).
	NoState bool `json:"no_state,omitempty"`
}

// Tuner works on the /proc and /sys tree under Root ("/" on a real host).
type Tuner struct {
	Root string
}

func (t Tuner) root() string {
	if t.Root == "" {
		return "/"
	}
	return t.Root
}

// State is what Apply records: per knob, every file and its previous content.
type State struct {
	Knobs map[string][]FileValue `json:"knobs"`
}

// FileValue is one file's previous value.
type FileValue struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// files returns the files behind a knob; empty means the host lacks it.
func (t Tuner) files(knob string) ([]string, error) {
	switch knob {
	case NUMABalancing:
		return existing(filepath.Join(t.root(), "proc/sys/kernel/numa_balancing")), nil
	case THP:
		return existing(filepath.Join(t.root(), "sys/kernel/mm/transparent_hugepage/enabled")), nil
	case Governor:
		m, err := filepath.Glob(filepath.Join(t.root(), "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
		sort.Strings(m)
		return m, err
	}
	return nil, fmt.Errorf("unknown knob %q", knob)
}

func existing(p string) []string {
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return []string{p}
}

// read returns the knob's value as one writes it back: the bracketed word
// for THP, the trimmed content otherwise.
func read(knob, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	if knob == THP {
		return sysinfo.BracketedMode(s), nil
	}
	return s, nil
}

// normalize maps user values to what the kernel file takes.
func normalize(knob, v string) (string, error) {
	switch knob {
	case NUMABalancing:
		switch v {
		case "off", "0":
			return "0", nil
		case "on", "1":
			return "1", nil
		}
		return "", fmt.Errorf("numa_balancing %q: want off or on", v)
	case THP:
		switch v {
		case "never", "madvise", "always":
			return v, nil
		}
		return "", fmt.Errorf("thp %q: want never, madvise or always", v)
	}
	if v == "" || strings.ContainsAny(v, " \n/") {
		return "", fmt.Errorf("%s %q is not a valid value", knob, v)
	}
	return v, nil
}

// Apply sets each knob in want (knob name to value). Knobs the host lacks
// are reported as unsupported, or fail the call when strict. The previous
// values are recorded in stateFile before anything is written; a knob already
// recorded there keeps its first previous value, so applying twice and
// reverting once restores the original.
func (t Tuner) Apply(want map[string]string, stateFile string, strict bool) (*Result, error) {
	st, err := ReadState(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		st, err = &State{Knobs: map[string][]FileValue{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tune apply: %w", err)
	}
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	sort.Strings(names)
	res := &Result{Changes: []Change{}}
	type plan struct {
		knob, value string
		files       []string
	}
	var plans []plan
	for _, k := range names {
		v, err := normalize(k, want[k])
		if err != nil {
			return nil, fmt.Errorf("tune apply: %w", err)
		}
		files, err := t.files(k)
		if err != nil {
			return nil, fmt.Errorf("tune apply: %w", err)
		}
		if len(files) == 0 {
			if strict {
				return nil, fmt.Errorf("tune apply: %s is not supported on this host", k)
			}
			res.Changes = append(res.Changes, Change{Knob: k, Value: v, Status: Unsupported, Reason: "the host has no such knob"})
			continue
		}
		if _, ok := st.Knobs[k]; !ok {
			var prev []FileValue
			for _, f := range files {
				cur, err := read(k, f)
				if err != nil {
					return nil, fmt.Errorf("tune apply: %w", err)
				}
				prev = append(prev, FileValue{Path: f, Value: cur})
			}
			st.Knobs[k] = prev
		}
		plans = append(plans, plan{k, v, files})
	}
	// Record before writing, so a crash mid-way can still be reverted.
	if len(plans) > 0 {
		if err := writeState(stateFile, st); err != nil {
			return nil, fmt.Errorf("tune apply: %w", err)
		}
	}
	for _, p := range plans {
		ch := Change{Knob: p.knob, Value: p.value, Previous: st.Knobs[p.knob][0].Value, Status: Unchanged}
		for _, f := range p.files {
			cur, err := read(p.knob, f)
			if err != nil {
				return nil, fmt.Errorf("tune apply: %w", err)
			}
			if cur == p.value {
				continue
			}
			if err := writeVerify(p.knob, f, p.value); err != nil {
				if strict {
					return nil, fmt.Errorf("tune apply: %w", err)
				}
				ch.Status, ch.Reason = Unsupported, err.Error()
				break
			}
			ch.Status = Applied
		}
		res.Changes = append(res.Changes, ch)
	}
	return res, nil
}

// writeVerify writes v to path and reads it back.
func writeVerify(knob, path, v string) error {
	if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s to %s: %w", v, path, err)
	}
	got, err := read(knob, path)
	if err != nil {
		return err
	}
	if got != v {
		return fmt.Errorf("write %s to %s: reads back %s", v, path, got)
	}
	return nil
}

// Revert writes back every value recorded in stateFile and removes it. A
// missing state file means an earlier revert already ran (or apply never
// did): that is a success with no changes, so undo can be repeated.
func (t Tuner) Revert(stateFile string) (*Result, error) {
	st, err := ReadState(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return &Result{Changes: []Change{}, NoState: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tune revert: %w", err)
	}
	names := make([]string, 0, len(st.Knobs))
	for k := range st.Knobs {
		names = append(names, k)
	}
	sort.Strings(names)
	res := &Result{Changes: []Change{}}
	var errs []error
	for _, k := range names {
		ch := Change{Knob: k, Status: Reverted}
		for i, fv := range st.Knobs[k] {
			cur, err := read(k, fv.Path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if i == 0 {
				ch.Previous, ch.Value = cur, fv.Value
			}
			if cur == fv.Value {
				continue
			}
			if err := writeVerify(k, fv.Path, fv.Value); err != nil {
				errs = append(errs, err)
			}
		}
		res.Changes = append(res.Changes, ch)
	}
	if err := errors.Join(errs...); err != nil {
		// Keep the state file so the revert can be retried.
		return res, fmt.Errorf("tune revert: %w", err)
	}
	if err := os.Remove(stateFile); err != nil {
		return res, fmt.Errorf("tune revert: remove %s: %w", stateFile, err)
	}
	return res, nil
}

// ReadState reads a state file written by Apply.
func ReadState(path string) (*State, error) {
	var st State
	if err := statefile.Read(path, &st); err != nil {
		return nil, err
	}
	if st.Knobs == nil {
		st.Knobs = map[string][]FileValue{}
	}
	return &st, nil
}

func writeState(path string, st *State) error {
	return statefile.Write(path, st)
}
