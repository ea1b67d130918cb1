// Package filelock holds advisory locks on files (flock(2) on Unix,
// LockFileEx on Windows), shared or exclusive,
// waiting for them or not. A lock goes with its file descriptor, so a
// crashed or killed holder never leaves one held. Every lock the project
// takes on a file goes through here.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Mode is how a lock is held.
type Mode int

const (
	// Exclusive excludes every other holder.
	Exclusive Mode = iota + 1
	// Shared excludes only an exclusive holder.
	Shared
)

// ErrHeld is the error of a Try whose lock another holder has in a mode
// that excludes it.
var ErrHeld = errors.New("held by another holder")

// pollEvery is how often LockPath tries again while it waits.
var pollEvery = 200 * time.Millisecond

// Lock is a lock held on an open file. Its file is the caller's to read and
// write while it holds the lock.
type Lock struct {
	f    *os.File
	once sync.Once
	err  error
}

// File is the locked file.
func (l *Lock) File() *os.File { return l.f }

// Close releases the lock and closes the file, returning the close's
// error. It may be called more than once, and on a nil Lock.
func (l *Lock) Close() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		unlock(l.f)
		l.err = l.f.Close()
	})
	return l.err
}

// Try takes the lock on f in mode without waiting. When another holder
// excludes it, the error wraps ErrHeld. On success the Lock owns f; on any
// error f stays open and the caller's.
func Try(f *os.File, mode Mode) (*Lock, error) {
	return take(f, mode, false)
}

// Wait takes the lock on f in mode, waiting for as long as it takes. On
// success the Lock owns f; on error f stays open and the caller's.
func Wait(f *os.File, mode Mode) (*Lock, error) {
	return take(f, mode, true)
}

func take(f *os.File, mode Mode, wait bool) (*Lock, error) {
	if mode != Exclusive && mode != Shared {
		return nil, fmt.Errorf("lock %s: unknown mode %d", f.Name(), mode)
	}
	if err := lock(f, mode, wait); err != nil {
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return &Lock{f: f}, nil
}

// LockPath opens path (creating it, mode 0644) and takes the lock on it in
// mode, trying again every 200ms until ctx ends; then the error wraps
// ctx.Err().
func LockPath(ctx context.Context, path string, mode Mode) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		l, err := Try(f, mode)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrHeld) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// TryPath opens path (creating it, mode 0644) and takes the lock on it in
// mode without waiting; the error wraps ErrHeld when another holds it.
func TryPath(path string, mode Mode) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	l, err := Try(f, mode)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}
