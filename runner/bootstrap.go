package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pkgmgr"
)

type bootstrapCmd struct{}

func init() { register(bootstrapCmd{}) }

func (bootstrapCmd) Name() string { return "bootstrap" }
func (bootstrapCmd) Synopsis() string {
	return "install the missing ones of --packages and of the packages of --tools with the host's package manager (apt-get, dnf or yum)"
}

func (c bootstrapCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	pkgs := fs.StringSlice("packages", nil, "package names, comma-separated or repeated")
	tools := fs.StringSlice("tools", nil, "tools by name, whatever their packages are called here: "+strings.Join(pkgmgr.Tools, ", ")+" (perf is linux-perf on Debian, linux-tools-$(uname -r) on Ubuntu, perf on dnf systems)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if len(*pkgs) == 0 && len(*tools) == 0 {
		return o.emit(nil, usagef("bootstrap needs --packages NAME[,NAME...] or --tools NAME[,NAME...]"), nil)
	}
	for _, t := range *tools {
		if !slices.Contains(pkgmgr.Tools, t) {
			return o.emit(nil, usagef("--tools %s: unknown tool; want one of %s", t, strings.Join(pkgmgr.Tools, ", ")), nil)
		}
	}
	for _, p := range *pkgs {
		if err := pkgmgr.CheckName(p); err != nil {
			return o.emit(nil, &usageError{err}, nil)
		}
	}
	m, err := pkgmgr.Detect()
	if errors.Is(err, pkgmgr.ErrNoManager) {
		return o.emit(nil, unmet(err), nil)
	}
	if err != nil {
		return o.emit(nil, err, nil)
	}
	all, err := pkgmgr.WithTools(m.Family(), *pkgs, *tools)
	if err != nil {
		return o.emit(nil, &usageError{err}, nil)
	}
	res, err := m.Install(ctx, all, pkgmgr.Options{Log: func(l string) { fmt.Fprintf(o.stderr, "%s: %s\n", m.Name, l) }})
	return o.emit(res, err, func(w io.Writer) {
		fmt.Fprintf(w, "%s: installed %s; already installed %s\n", res.Manager, orNone(res.Installed), orNone(res.Present))
	})
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
