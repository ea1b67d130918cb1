// Command pgbench-runner does the host-side work of terraform-provider-pgbench
// on a benchmark host: host facts, OS tuning, huge pages, PostgreSQL builds
// and A/B campaigns. It is useful on its own; every subcommand prints text for
// people by default and one JSON document on stdout with --json.
//
// Exit codes:
//
//	0  success
//	1  the operation failed (details on stderr, or in the JSON error object)
//	2  usage error: unknown subcommand, bad flag or bad value
//	3  the host lacks something the operation needs (a tool, a kernel knob
//	   under --strict, enough huge pages)
//	130 interrupted by SIGINT or SIGTERM; work done so far is kept
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in the package comment and in README.md.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnmet       = 3
	exitInterrupted = 130
)

// command is one subcommand. Each lives in its own file and registers itself
// with register in an init function.
type command interface {
	Name() string
	Synopsis() string
	Run(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.Name()]; dup {
		panic("pgbench-runner: duplicate subcommand " + c.Name())
	}
	commands[c.Name()] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stdout and stderr are where subcommands write; run sets them so tests can
// capture a whole invocation.
var stdout, stderr io.Writer = os.Stdout, os.Stderr

func run(ctx context.Context, args []string, outW, errW io.Writer) int {
	stdout, stderr = outW, errW
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "pgbench-runner: unknown subcommand %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	err := c.Run(ctx, args[1:])
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	code := exitCode(ctx, err)
	var je *jsonReported
	if !errors.As(err, &je) {
		fmt.Fprintf(stderr, "pgbench-runner %s: %v\n", c.Name(), err)
	}
	return code
}

func exitCode(ctx context.Context, err error) int {
	if ctx.Err() != nil {
		return exitInterrupted
	}
	switch errorKind(err) {
	case runnerclient.KindUsage:
		return exitUsage
	case runnerclient.KindUnmet:
		return exitUnmet
	case runnerclient.KindInterrupted:
		return exitInterrupted
	}
	return exitFailure
}

// errorKind names the class of err, as the JSON error document and the exit
// code report it: "usage", "unmet", "interrupted" or "failure".
func errorKind(err error) string {
	var ue *usageError
	var me *unmetError
	switch {
	case errors.As(err, &ue):
		return runnerclient.KindUsage
	case errors.As(err, &me):
		return runnerclient.KindUnmet
	case errors.Is(err, context.Canceled):
		return runnerclient.KindInterrupted
	}
	return runnerclient.KindFailure
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "pgbench-runner %s: host-side work for PostgreSQL A/B benchmarks.\n\n", version)
	fmt.Fprintf(w, "Usage: pgbench-runner <subcommand> [flags]\n\nSubcommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].Synopsis())
	}
	fmt.Fprintf(w, "\nEvery subcommand takes --help, and --json to print one JSON document on stdout.\n")
	fmt.Fprintf(w, "Exit codes: 0 ok, 1 failed, 2 usage error, 3 host lacks a requirement, 130 interrupted.\n")
}
