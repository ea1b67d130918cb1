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
//	130 interrupted by SIGINT; work done so far is kept
//	143 stopped by SIGTERM; work done so far is kept
//
// A signal cancels the running subcommand, which stops what it started (a
// campaign its pgbench and server) and keeps its journal; the runner then
// exits with 128 plus the signal's number, as a shell reports a process a
// signal ended. Help (pgbench-runner help [CMD], CMD --help) goes to stdout.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
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
	exitInterrupted = 130 // SIGINT, or a cancellation without a signal
	exitTerminated  = 143 // SIGTERM
)

// command is one subcommand. Each lives in its own file and registers itself
// with register in an init function.
type command interface {
	Name() string
	Synopsis() string
	Run(ctx context.Context, args []string) error
}

// withActions is a command whose first argument may name an action of its
// own (history import, hugepages reserve, completion bash); help and the
// completion scripts list them.
type withActions interface {
	Actions() []string
}

// actionsOf is c's actions, none for a command without.
func actionsOf(c command) []string {
	if a, ok := c.(withActions); ok {
		return a.Actions()
	}
	return nil
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.Name()]; dup {
		panic("pgbench-runner: duplicate subcommand " + c.Name())
	}
	commands[c.Name()] = c
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	// The first signal cancels the subcommand; later ones are caught too,
	// so a second Ctrl-C does not cut its cleanup short.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel(signalled{s.(syscall.Signal)})
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(code)
}

// signalled is the cause of a context a signal cancelled.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return "interrupted by " + s.sig.String() }

// stdout and stderr are where subcommands write; run sets them so tests can
// capture a whole invocation.
var stdout, stderr io.Writer = os.Stdout, os.Stderr

func run(ctx context.Context, args []string, outW, errW io.Writer) int {
	stdout, stderr = outW, errW
	switch {
	case len(args) == 0:
		usage(stderr)
		return exitUsage
	case args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1):
		usage(stdout)
		return exitOK
	case args[0] == "help":
		// help CMD [ACTION] is CMD [ACTION] --help.
		args = append(args[1:], "--help")
		if c, ok := commands[args[0]]; ok && len(args) > 2 && !slices.Contains(actionsOf(c), args[1]) {
			fmt.Fprintf(stderr, "pgbench-runner: %s has no action %q; it has: %s\n", args[0], args[1], strings.Join(actionsOf(c), ", "))
			return exitUsage
		}
	case args[0] == "--version":
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
		var s signalled
		if errors.As(context.Cause(ctx), &s) {
			return 128 + int(s.sig)
		}
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
	fmt.Fprintf(w, "\nEvery subcommand takes --help (or: pgbench-runner help SUBCOMMAND [ACTION]), and --json to print one\n"+
		"JSON document on stdout. Shell completion: source <(pgbench-runner completion bash|zsh).\n")
	fmt.Fprintf(w, "Exit codes: 0 ok, 1 failed, 2 usage error, 3 host lacks a requirement, 130 interrupted (SIGINT),\n"+
		"143 stopped (SIGTERM).\n")
}
