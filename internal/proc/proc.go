// Package proc holds what starting and signalling a process needs that
// differs between operating systems: its own process group, death with its
// parent where the kernel offers it, a user to run as, and signals to a
// group or a pid. The host-side code runs on Linux; the provider also runs
// on macOS and Windows, where only what it needs there is supported.
package proc

import "errors"

// Credential is a user and group to run a command as.
type Credential struct {
	Uid, Gid uint32
}

// ErrGone is returned when a signalled process does not exist.
var ErrGone = errors.New("no such process")
