//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// lock takes flock(2) on f; a lock another holder excludes is ErrHeld
// unless wait is set.
func lock(f *os.File, mode Mode, wait bool) error {
	how := syscall.LOCK_EX
	if mode == Shared {
		how = syscall.LOCK_SH
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrHeld
		default:
			return err
		}
	}
}

func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
