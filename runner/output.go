package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// usageError marks a bad invocation (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit code 2).
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// unmetError marks a host that lacks a requirement (exit code 3).
type unmetError struct{ err error }

func (e *unmetError) Error() string { return e.err.Error() }
func (e *unmetError) Unwrap() error { return e.err }

// unmet wraps err as "the host lacks a requirement" (exit code 3).
func unmet(err error) error { return &unmetError{err} }

// jsonReported marks an error already written to stdout as a JSON error
// document, so main does not print it again.
type jsonReported struct{ err error }

func (e *jsonReported) Error() string { return e.err.Error() }
func (e *jsonReported) Unwrap() error { return e.err }

// output carries the flags every subcommand shares: --json.
type output struct {
	json   bool
	stdout io.Writer
	stderr io.Writer
}

// newFlagSet returns a flag set for a subcommand with the shared --json flag
// bound to o. Parse errors become usage errors. Help, which pflag prints for
// --help and -h, goes to stdout: it is what was asked for, not an error.
func newFlagSet(name, synopsis string, o *output) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.BoolVar(&o.json, "json", false, "print one JSON document on stdout instead of text")
	fs.SortFlags = false
	if o.stdout == nil {
		o.stdout = stdout
	}
	if o.stderr == nil {
		o.stderr = stderr
	}
	fs.Usage = func() {
		fmt.Fprintf(o.stdout, "Usage: pgbench-runner %s [flags]\n\n%s\n\nFlags:\n%s", name, synopsis, fs.FlagUsages())
	}
	return fs
}

// describe, when set, receives the flag set a subcommand is about to
// parse, and the subcommand returns pflag.ErrHelp without running: the
// completion scripts read each command's flags from the flag set its Run
// builds (flagsOf), so they never list a flag of their own.
var describe func(*pflag.FlagSet)

// parse parses args, turning flag errors into usage errors.
func parse(fs *pflag.FlagSet, args []string) error {
	if describe != nil {
		describe(fs)
		return pflag.ErrHelp
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	return nil
}

// errorDoc is the runner's name for the shared error document type.
type errorDoc = runnerclient.ErrorDoc

// emit prints v as JSON with --json, or calls text otherwise. On error it
// prints the JSON error document (runnerclient.ErrorDoc, which the provider
// decodes) with --json; the error is returned so the exit code is set.
func (o *output) emit(v any, err error, text func(w io.Writer)) error {
	if err != nil {
		if !o.json {
			return err
		}
		writeJSON(o.stdout, errorDoc{Error: runnerclient.ErrorBody{Message: err.Error(), Kind: errorKind(err)}})
		fmt.Fprintf(o.stderr, "error: %v\n", err)
		return &jsonReported{err}
	}
	if o.json {
		return writeJSON(o.stdout, v)
	}
	if text != nil {
		text(o.stdout)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
