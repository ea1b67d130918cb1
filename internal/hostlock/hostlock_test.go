package hostlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary take the lock in the mode it names, say
// so on stdout and hold it until killed, so a test can SIGKILL a real
// holder.
const childEnv = "PGBENCH_HOSTLOCK_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		l, err := Acquire(context.Background(), Holder{Who: "campaign /child", Doing: "measuring", Mode: Mode(mode)}, Waiting{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("held")
		defer l.Release()
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// lockDir points the package at a directory of the test's own.
func lockDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "lock")
	t.Setenv(DirEnv, d)
	return d
}

func acquire(t *testing.T, mode Mode, who string) *Lock {
	t.Helper()
	l, err := Acquire(context.Background(), Holder{Who: who, Doing: "working", Mode: mode}, Waiting{})
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", mode, who, err)
	}
	t.Cleanup(l.Release)
	return l
}

// excluded checks that an Acquire in mode gives up when its context ends,
// with an error naming every holder in want.
func excluded(t *testing.T, mode Mode, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l, err := Acquire(ctx, Holder{Who: "campaign /waiter", Doing: "measuring", Mode: mode}, Waiting{})
	if err == nil {
		l.Release()
		t.Fatalf("Acquire(%s) succeeded while %q hold the lock", mode, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire(%s) error = %v, want it to wrap context.DeadlineExceeded", mode, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Acquire(%s) error = %q, want it to name %q", mode, err, w)
		}
	}
}

func TestExclusiveExcludesExclusiveAndShared(t *testing.T) {
	lockDir(t)
	l := acquire(t, Exclusive, "campaign /a")
	excluded(t, Exclusive, "campaign /a working since", fmt.Sprintf("(pid %d)", os.Getpid()))
	excluded(t, Shared, "campaign /a")
	l.Release()
	acquire(t, Shared, "build /b")
}

func TestSharedAdmitsShared(t *testing.T) {
	dir := lockDir(t)
	acquire(t, Shared, "build /opt/one")
	acquire(t, Shared, "campaign /two")
	hs, err := Holders(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Who != "build /opt/one" || hs[1].Who != "campaign /two" {
		t.Fatalf("holders = %+v, want build /opt/one then campaign /two", hs)
	}
	for _, h := range hs {
		if h.Mode != Shared || h.PID != os.Getpid() || time.Since(h.Since) > time.Minute || h.Since.Location() != time.UTC {
			t.Errorf("holder %+v: want shared, pid %d, since just now in UTC", h, os.Getpid())
		}
	}
	excluded(t, Exclusive, "build /opt/one", "campaign /two")
}

// TestCancelWhileWaiting cancels a waiting Acquire: it returns at once,
// not at its next try, with an error naming the holder and the wait.
func TestCancelWhileWaiting(t *testing.T) {
	lockDir(t)
	acquire(t, Exclusive, "campaign /x/y")
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan Wait, 1)
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(ctx, Holder{Who: "build /p", Doing: "building", Mode: Shared}, Waiting{Report: func(w Wait) { waiting <- w }})
		done <- err
	}()
	w := <-waiting
	if len(w.Holders) != 1 || w.Holders[0].Who != "campaign /x/y" || w.Waited != 0 {
		t.Errorf("first wait = %+v, want the one holder campaign /x/y, 0s so far", w)
	}
	if got := w.String(); !strings.HasPrefix(got, "waiting for the host: campaign /x/y working since ") || !strings.HasSuffix(got, fmt.Sprintf("(pid %d), 0s so far", os.Getpid())) {
		t.Errorf("wait line = %q", got)
	}
	time.Sleep(1500 * time.Millisecond)
	cancelled := time.Now()
	cancel()
	err := <-done
	if d := time.Since(cancelled); d > 200*time.Millisecond {
		t.Errorf("Acquire returned %v after the cancel, want at once", d)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "gave up waiting for the host after 2s, held by campaign /x/y working since") {
		t.Errorf("error = %v, want the wait of 2s and the holder, wrapping context.Canceled", err)
	}
}

// TestWaitReportsRepeat shortens the intervals: a waiter reports at once
// and then every reportEvery, with the time it has waited.
func TestWaitReportsRepeat(t *testing.T) {
	lockDir(t)
	defer func(p, r time.Duration) { pollEvery, reportEvery = p, r }(pollEvery, reportEvery)
	pollEvery, reportEvery = 10*time.Millisecond, 100*time.Millisecond
	acquire(t, Shared, "build /p")
	var mu sync.Mutex
	var waits []Wait
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	_, err := Acquire(ctx, Holder{Who: "campaign /c", Doing: "measuring", Mode: Exclusive}, Waiting{Report: func(w Wait) {
		mu.Lock()
		waits = append(waits, w)
		mu.Unlock()
	}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the deadline", err)
	}
	if len(waits) < 3 || len(waits) > 6 {
		t.Fatalf("%d wait reports in 550ms at one per 100ms, want 5 or so", len(waits))
	}
	for i, w := range waits {
		if lo := time.Duration(i) * 100 * time.Millisecond; w.Waited < lo || len(w.Holders) != 1 {
			t.Errorf("report %d: waited %v with holders %+v, want at least %v and build /p", i, w.Waited, w.Holders, lo)
		}
	}
}

// TestWaitLimit gives up after Waiting.Limit, though the context lives on.
func TestWaitLimit(t *testing.T) {
	lockDir(t)
	acquire(t, Exclusive, "campaign /a")
	start := time.Now()
	_, err := Acquire(context.Background(), Holder{Who: "build /b", Doing: "building", Mode: Shared}, Waiting{Limit: 1500 * time.Millisecond})
	if d := time.Since(start); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("Acquire with a limit of 1.5s returned after %v", d)
	}
	if err == nil || !strings.Contains(err.Error(), "gave up waiting for the host after 2s, held by campaign /a working since ") ||
		!strings.HasSuffix(err.Error(), "waited the longest allowed, 1.5s") {
		t.Errorf("error = %v, want the wait, the holder and the limit", err)
	}
}

func TestHolderText(t *testing.T) {
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 1, 0, time.UTC)
	w := Wait{Holders: []Holder{{Who: "campaign /x/y", Doing: "measuring", Mode: Exclusive, PID: 123, Since: since}}, Waited: 40200 * time.Millisecond}
	if got, want := w.String(), "waiting for the host: campaign /x/y measuring since 00:00:01Z (pid 123), 40s so far"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	old := Holder{Who: "build /opt/b", Doing: "building", PID: 7, Since: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
	if got, want := old.String(), "build /opt/b building since 2024-05-06T07:08:09Z (pid 7)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := (Wait{Waited: time.Minute}).Describe(), "an unknown holder, 1m0s so far"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

// TestDirIsShared checks what lets runners of different users share the
// lock: a sticky world-writable directory and a lock file anyone opens.
func TestDirIsShared(t *testing.T) {
	dir := lockDir(t)
	acquire(t, Shared, "build /p")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode()&(os.ModePerm|os.ModeSticky), 0o777|os.ModeSticky; got != want {
		t.Errorf("mode of %s = %v, want %v", dir, got, want)
	}
	fi, err = os.Stat(filepath.Join(dir, lockName))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o666 {
		t.Errorf("mode of the lock file = %v, want 0666", got)
	}
}

func TestUnknownMode(t *testing.T) {
	lockDir(t)
	if _, err := Acquire(context.Background(), Holder{Who: "x", Mode: "both"}, Waiting{}); err == nil || !strings.Contains(err.Error(), `unknown mode "both"`) {
		t.Fatalf("Acquire with mode both = %v, want an unknown mode error", err)
	}
}

// TestKilledHolderLeavesNothingHeld runs a real process that holds the lock
// exclusively, kills it with SIGKILL, and takes the lock at the first try:
// the kernel drops a flock with the process, and the file the holder left
// is not reported as a holder, then is removed.
func TestKilledHolderLeavesNothingHeld(t *testing.T) {
	dir := lockDir(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+string(Exclusive))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("child said %q, %v; want held", line, err)
	}
	hs, err := Holders(dir)
	if err != nil || len(hs) != 1 || hs[0].PID != child.Process.Pid || hs[0].Mode != Exclusive {
		t.Fatalf("holders = %+v, %v; want the child, pid %d, exclusive", hs, err, child.Process.Pid)
	}
	excluded(t, Shared, "campaign /child measuring", fmt.Sprintf("(pid %d)", child.Process.Pid))

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if hs, _ := Holders(dir); len(hs) != 0 {
		t.Errorf("holders after the kill = %+v, want none", hs)
	}
	waited := false
	start := time.Now()
	l, err := Acquire(context.Background(), Holder{Who: "campaign /next", Doing: "measuring", Mode: Exclusive}, Waiting{Report: func(Wait) { waited = true }})
	if err != nil {
		t.Fatalf("Acquire after the kill: %v", err)
	}
	defer l.Release()
	if waited || time.Since(start) > 100*time.Millisecond {
		t.Errorf("Acquire after the kill waited (%v), want the lock at once", time.Since(start))
	}
	files, _ := filepath.Glob(filepath.Join(dir, holderPrefix+"*"))
	if len(files) != 1 || files[0] != l.holder {
		t.Errorf("holder files = %q, want only %s", files, l.holder)
	}
}
