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
// bound to o. Parse errors become usage errors.
func newFlagSet(name, synopsis string, o *output) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.BoolVar(&o.json, "json", false, "print one JSON document on stdout instead of text")
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: pgbench-runner %s [flags]\n\n%s\n\nFlags:\n%s", name, synopsis, fs.FlagUsages())
	}
	if o.stdout == nil {
		o.stdout = stdout
	}
	if o.stderr == nil {
		o.stderr = stderr
	}
	return fs
}

// parse parses args, turning flag errors into usage errors.
func parse(fs *pflag.FlagSet, args []string) error {
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
