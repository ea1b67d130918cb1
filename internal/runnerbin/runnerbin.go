// Package runnerbin holds the pgbench-runner binaries embedded in the
// provider at build time, one per Linux architecture.
//
// `make build` and `make install` cross-compile runner/ into
// bin/pgbench-runner-linux-<arch> before building the provider. A plain
// `go build .` still compiles, without them; asking for a binary then fails
// with a message that says how to get one.
package runnerbin

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed bin
var files embed.FS

// Arch maps the output of `uname -m` on a host to a Go architecture name.
func Arch(unameM string) (string, error) {
	switch strings.TrimSpace(unameM) {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("unsupported host architecture %q: pgbench-runner is built for x86_64 and aarch64", strings.TrimSpace(unameM))
}

// Name is the file name of the embedded runner for a Go architecture.
func Name(goarch string) string { return "pgbench-runner-linux-" + goarch }

// ErrNotEmbedded is returned by Binary when the provider was built without
// the runner for the requested architecture.
type ErrNotEmbedded struct{ Arch string }

func (e *ErrNotEmbedded) Error() string {
	return fmt.Sprintf("this provider build has no embedded pgbench-runner for linux/%s: "+
		"build the provider with `make build` or `make install` (they embed the runner), "+
		"or set runner { path = \"...\" } in the provider configuration to a runner built with `make runner`", e.Arch)
}

// Binary returns the embedded runner for a Go architecture.
func Binary(goarch string) ([]byte, error) {
	b, err := fs.ReadFile(files, "bin/"+Name(goarch))
	if err != nil {
		return nil, &ErrNotEmbedded{Arch: goarch}
	}
	return b, nil
}

// Embedded lists the architectures this build carries a runner for.
func Embedded() []string {
	var archs []string
	for _, a := range []string{"amd64", "arm64"} {
		if _, err := fs.Stat(files, "bin/"+Name(a)); err == nil {
			archs = append(archs, a)
		}
	}
	return archs
}
