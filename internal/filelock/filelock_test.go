package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// open opens path as a second holder would: flock locks belong to an open
// file, so two opens in one process exclude each other as two processes do.
func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestTryModes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second Mode
		wantHeld      bool
	}{
		{"shared beside shared", Shared, Shared, false},
		{"exclusive beside shared", Shared, Exclusive, true},
		{"shared beside exclusive", Exclusive, Shared, true},
		{"exclusive beside exclusive", Exclusive, Exclusive, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.lock")
			first, err := Try(open(t, p), tc.first)
			if err != nil {
				t.Fatalf("first lock: %v", err)
			}
			defer first.Close()
			second, err := Try(open(t, p), tc.second)
			if got := errors.Is(err, ErrHeld); got != tc.wantHeld {
				t.Fatalf("second lock: err = %v, held = %v, want %v", err, got, tc.wantHeld)
			}
			if err == nil {
				second.Close()
			}
			// Once the first is gone, the second always gets it.
			first.Close()
			again, err := Try(open(t, p), tc.second)
			if err != nil {
				t.Fatalf("lock after release: %v", err)
			}
			again.Close()
		})
	}
}

func TestWaitBlocksUntilRelease(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	held, err := Wait(open(t, p), Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := Wait(open(t, p), Exclusive)
		if err == nil {
			l.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Wait returned %v while the lock was held, want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	held.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Wait after release: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait still waiting 10s after the release")
	}
}

func TestLockPathGivesUpWithContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	held, err := LockPath(context.Background(), p, Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := LockPath(ctx, p, Shared); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock while held: err = %v, want deadline exceeded", err)
	}
	if _, err := TryPath(p, Exclusive); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryPath while held: err = %v, want ErrHeld", err)
	}
	go func() { time.Sleep(300 * time.Millisecond); held.Close() }()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := LockPath(ctx, p, Exclusive)
	if err != nil {
		t.Fatalf("lock once released: %v", err)
	}
	l.Close()
}

func TestCloseTwiceAndNil(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryPath(p, Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.File().WriteString("123\n"); err != nil {
		t.Fatalf("write through the lock's file: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	var none *Lock
	if err := none.Close(); err != nil {
		t.Fatalf("close of nil lock: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "123\n" {
		t.Fatalf("lock file = %q, %v, want the line written", b, err)
	}
}

func TestUnknownMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if _, err := Try(open(t, p), Mode(0)); err == nil || errors.Is(err, ErrHeld) {
		t.Fatalf("mode 0: err = %v, want an unknown-mode error", err)
	}
}
