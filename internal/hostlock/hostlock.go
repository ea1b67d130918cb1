// Package hostlock makes the work on a host that disturbs a measurement take
// turns: a campaign's measured phase holds the host's lock exclusively,
// builds and data loads hold it shared, so they may run beside each other
// but never beside a measurement.
//
// The lock is flock(2) on a file in a host-wide directory (DefaultDir, or
// DirEnv), so it goes with the process: a crashed or killed holder never
// leaves it held. Each holder writes who it is into a file of its own next
// to the lock, so that a waiter can say what it waits for.
package hostlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
)

// DefaultDir holds the host's lock and its holders' files. It is shared by
// every runner on the host, root or not, so it is made world-writable with
// the sticky bit, like /tmp.
const DefaultDir = "/run/lock/pgbench-runner"

// DirEnv overrides DefaultDir (tests).
const DirEnv = "PGBENCH_RUNNER_LOCK_DIR"

// ClientFile is the lock a campaign that runs pgbench on another host
// holds there, with flock(1), while it lasts: two campaigns cannot share a
// client host. It is a file of its own, beside the host's lock, so a
// client host may be a host that measures too (and test hosts, which share
// one file system, do not lock each other out).
const ClientFile = DefaultDir + "/client.lock"

const (
	lockName     = "host.lock"
	holderPrefix = "holder."
	holderSuffix = ".json"
)

// Mode is how the lock is held.
type Mode string

const (
	// Shared is held by work that may run beside other shared work but
	// not beside a measurement: builds and data loads.
	Shared Mode = "shared"
	// Exclusive is held by a measured phase: nothing else at all.
	Exclusive Mode = "exclusive"
)

// Intervals of Acquire: how often it tries again, and how often it reports
// that it is still waiting.
var (
	pollEvery   = time.Second
	reportEvery = 30 * time.Second
)

// Holder says who holds (or asks for) the lock.
type Holder struct {
	// Who names the holder: "campaign /dir" or "build /prefix".
	Who string `json:"who"`
	// Doing says what it does while it holds the lock: measuring, loading,
	// building.
	Doing string    `json:"doing"`
	Mode  Mode      `json:"mode"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
}

// String is the holder for a person: "campaign /x/y measuring since
// 12:00:01Z (pid 123)".
func (h Holder) String() string {
	return fmt.Sprintf("%s %s since %s (pid %d)", h.Who, h.Doing, clock(h.Since, time.Now()), h.PID)
}

// clock is t in UTC, the time of day alone when t is today.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05Z")
	}
	return t.Format(time.RFC3339)
}

// Wait is the state of an Acquire that waits: who holds the lock in a way
// that excludes it, and for how long it has waited.
type Wait struct {
	Holders []Holder
	Waited  time.Duration
}

// Describe is the wait without its prefix: "campaign /x/y measuring since
// 12:00:01Z (pid 123), 40s so far".
func (w Wait) Describe() string {
	return holdersText(w.Holders) + ", " + w.Waited.Round(time.Second).String() + " so far"
}

// String is the line a waiting build or campaign prints.
func (w Wait) String() string { return "waiting for the host: " + w.Describe() }

func holdersText(hs []Holder) string {
	if len(hs) == 0 {
		return "an unknown holder"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.String()
	}
	return strings.Join(parts, ", ")
}

// Dir is the directory of the host's lock: DirEnv, or DefaultDir.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return DefaultDir
}

// Lock is a held host lock.
type Lock struct {
	once   sync.Once
	lock   *filelock.Lock
	holder string
}

// Release removes the holder's file and releases the lock. It may be
// called more than once, and on a nil Lock.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		// The file goes first, so no one ever reads it as a holder's
		// after the lock is free.
		os.Remove(l.holder)
		l.lock.Close()
	})
}

// seq tells apart the holder files of one process (a test holds more than
// one lock).
var seq atomic.Int64

// Waiting says how an Acquire waits for the lock.
type Waiting struct {
	// Limit gives up after this long; 0 waits until the context ends.
	Limit time.Duration
	// Report (may be nil) hears the wait at once and then every 30
	// seconds.
	Report func(Wait)
}

// Acquire takes the host's lock in h.Mode for h, filling in its PID and
// Since. While the lock is held in a way that excludes it, it tries again
// every second and tells w.Report, until ctx ends or w.Limit passes; then
// it fails with an error that names the holders and how long it waited
// (wrapping ctx.Err() when ctx ended).
func Acquire(ctx context.Context, h Holder, w Waiting) (*Lock, error) {
	how := filelock.Shared
	switch h.Mode {
	case Shared:
	case Exclusive:
		how = filelock.Exclusive
	default:
		return nil, fmt.Errorf("host lock: unknown mode %q", h.Mode)
	}
	dir := Dir()
	f, err := open(dir)
	if err != nil {
		return nil, err
	}
	var waitStart, reported time.Time
	var held *filelock.Lock
	for {
		held, err = filelock.Try(f, how)
		if err == nil {
			break
		}
		if !errors.Is(err, filelock.ErrHeld) {
			f.Close()
			return nil, err
		}
		now := time.Now()
		if waitStart.IsZero() {
			waitStart = now
		}
		if w.Report != nil && (reported.IsZero() || now.Sub(reported) >= reportEvery) {
			reported = now
			w.Report(Wait{Holders: blocking(dir, h.Mode), Waited: now.Sub(waitStart)})
		}
		gaveUp := func(why error) error {
			f.Close()
			return fmt.Errorf("gave up waiting for the host after %s, held by %s: %w",
				time.Since(waitStart).Round(time.Second), holdersText(blocking(dir, h.Mode)), why)
		}
		next := pollEvery
		if w.Limit > 0 {
			left := w.Limit - now.Sub(waitStart)
			if left <= 0 {
				return nil, gaveUp(fmt.Errorf("waited the longest allowed, %s", w.Limit))
			}
			next = min(next, left)
		}
		select {
		case <-ctx.Done():
			return nil, gaveUp(ctx.Err())
		case <-time.After(next):
		}
	}
	removeStale(dir, h.Mode)
	h.PID, h.Since = os.Getpid(), time.Now().UTC()
	l := &Lock{lock: held, holder: filepath.Join(dir, fmt.Sprintf("%s%d.%d%s", holderPrefix, h.PID, seq.Add(1), holderSuffix))}
	if err := atomicfile.WriteJSON(l.holder, h, 0o644); err != nil {
		l.Release()
		return nil, fmt.Errorf("host lock: %w", err)
	}
	return l, nil
}

// open makes the lock's directory, shared by every user, and opens the
// lock file in it.
func open(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("host lock: mkdir %s: %w", dir, err)
	}
	// Only its owner can widen it; anyone else finds it widened already.
	if fi, err := os.Stat(dir); err == nil && fi.Mode()&(os.ModePerm|os.ModeSticky) != 0o777|os.ModeSticky {
		os.Chmod(dir, 0o777|os.ModeSticky)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if errors.Is(err, os.ErrPermission) {
		// flock needs no write access: another user's file will do.
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, fmt.Errorf("host lock: open %s: %w", path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm() != 0o666 {
		f.Chmod(0o666)
	}
	return f, nil
}

// Holders lists the live holders recorded in dir, oldest first. A file left
// by a process that is gone is not a holder.
func Holders(dir string) ([]Holder, error) {
	paths, err := filepath.Glob(filepath.Join(dir, holderPrefix+"*"+holderSuffix))
	if err != nil {
		return nil, fmt.Errorf("host lock holders in %s: %w", dir, err)
	}
	var hs []Holder
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // released since the listing
		}
		var h Holder
		if json.Unmarshal(b, &h) != nil || !alive(h.PID) {
			continue
		}
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Since.Before(hs[j].Since) })
	return hs, nil
}

// blocking is the holders that exclude an Acquire in mode: all of them for
// an exclusive one, the exclusive holder for a shared one.
func blocking(dir string, mode Mode) []Holder {
	hs, _ := Holders(dir)
	if mode == Exclusive {
		return hs
	}
	var out []Holder
	for _, h := range hs {
		if h.Mode == Exclusive {
			out = append(out, h)
		}
	}
	return out
}

// removeStale deletes the holder files that cannot be a holder's now that
// this process holds the lock in mode: every one after an exclusive
// acquire, the exclusive ones after a shared one. They are what a killed
// holder left behind. Another user's file in the sticky directory stays;
// Holders skips it once its process is gone.
func removeStale(dir string, mode Mode) {
	paths, _ := filepath.Glob(filepath.Join(dir, holderPrefix+"*"+holderSuffix))
	for _, p := range paths {
		if mode == Shared {
			b, err := os.ReadFile(p)
			var h Holder
			if err != nil || json.Unmarshal(b, &h) != nil || h.Mode != Exclusive {
				continue
			}
		}
		os.Remove(p)
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return proc.Alive(pid)
}
