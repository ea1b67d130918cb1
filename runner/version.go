package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

type versionCmd struct{}

func init() { register(versionCmd{}) }

func (versionCmd) Name() string     { return "version" }
func (versionCmd) Synopsis() string { return "print the runner's version, Go version and platform" }

// versionInfo is the JSON of `pgbench-runner version --json`.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func (c versionCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	return o.emit(v, nil, func(w io.Writer) {
		fmt.Fprintf(w, "pgbench-runner %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
	})
}
