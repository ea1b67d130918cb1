package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tune"
)

type tuneCmd struct{}

func init() { register(tuneCmd{}) }

func (tuneCmd) Name() string { return "tune" }
func (tuneCmd) Synopsis() string {
	return "apply|revert OS knobs (numa_balancing, governor, thp), recording previous values in --state"
}

func (tuneCmd) Actions() []string { return []string{"apply", "revert"} }

func (c tuneCmd) Run(ctx context.Context, args []string) error {
	action := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	var o output
	fs := newFlagSet(c.Name()+" "+orDefault(action, "apply|revert"), c.Synopsis(), &o)
	state := fs.String("state", "", "state file with the previous values (required)")
	nb := fs.String("numa-balancing", "", "apply: off or on")
	gov := fs.String("governor", "", "apply: CPU frequency governor, e.g. performance")
	thp := fs.String("thp", "", "apply: transparent huge pages: never, madvise or always")
	strict := fs.Bool("strict", false, "apply: fail if the host lacks a requested knob")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if *state == "" {
		return o.emit(nil, usagef("tune needs --state FILE"), nil)
	}
	var t tune.Tuner
	var res *tune.Result
	var err error
	switch action {
	case "apply":
		want := map[string]string{}
		for k, v := range map[string]string{tune.NUMABalancing: *nb, tune.Governor: *gov, tune.THP: *thp} {
			if v != "" {
				want[k] = v
			}
		}
		if len(want) == 0 {
			return o.emit(nil, usagef("tune apply needs at least one of --numa-balancing, --governor, --thp"), nil)
		}
		res, err = t.Apply(want, *state, *strict)
		if err != nil && *strict && strings.Contains(err.Error(), "not supported") {
			err = unmet(err)
		}
	case "revert":
		res, err = t.Revert(*state)
	case "":
		return o.emit(nil, usagef("tune needs an action: apply or revert"), nil)
	default:
		return o.emit(nil, usagef("unknown tune action %q: want apply or revert", action), nil)
	}
	return o.emit(res, err, func(w io.Writer) {
		if res.NoState {
			fmt.Fprintf(w, "nothing to revert: no state file at %s\n", *state)
			return
		}
		for _, ch := range res.Changes {
			fmt.Fprintf(w, "%-15s %-12s %s -> %s", ch.Knob, ch.Status, orDefault(ch.Previous, "-"), orDefault(ch.Value, "-"))
			if ch.Reason != "" {
				fmt.Fprintf(w, " (%s)", ch.Reason)
			}
			fmt.Fprintln(w)
		}
	})
}
