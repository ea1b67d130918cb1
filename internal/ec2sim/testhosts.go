package ec2sim

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// hostTB lets testhost.New run outside the test goroutine: failures and
// skips become an error instead of ending the test, and cleanups are kept
// so the simulator tears the host down when the instance terminates.
type hostTB struct {
	testing.TB
	mu       sync.Mutex
	err      error
	cleanups []func()
	done     bool
}

func (h *hostTB) fail(msg string) {
	h.mu.Lock()
	if h.err == nil {
		h.err = fmt.Errorf("%s", msg)
	}
	h.mu.Unlock()
	runtime.Goexit()
}

func (h *hostTB) Helper()                         {}
func (h *hostTB) Fatalf(format string, a ...any)  { h.fail(fmt.Sprintf(format, a...)) }
func (h *hostTB) Fatal(a ...any)                  { h.fail(fmt.Sprint(a...)) }
func (h *hostTB) FailNow()                        { h.fail("test host setup failed") }
func (h *hostTB) Skipf(format string, a ...any)   { h.fail(fmt.Sprintf(format, a...)) }
func (h *hostTB) Skip(a ...any)                   { h.fail(fmt.Sprint(a...)) }
func (h *hostTB) SkipNow()                        { h.fail("test host skipped") }
func (h *hostTB) Errorf(format string, a ...any)  { h.TB.Logf("ec2sim test host: "+format, a...) }
func (h *hostTB) Error(a ...any)                  { h.TB.Log(append([]any{"ec2sim test host:"}, a...)...) }
func (h *hostTB) Logf(format string, args ...any) { h.TB.Logf(format, args...) }

// Cleanup keeps f for the host's teardown; once the host is torn down, f
// runs at once (an sshd started while the instance was terminating).
func (h *hostTB) Cleanup(f func()) {
	h.mu.Lock()
	done := h.done
	if !done {
		h.cleanups = append(h.cleanups, f)
	}
	h.mu.Unlock()
	if done {
		f()
	}
}

// TempDir gives a directory removed with the host rather than at the end
// of the test, so the sshd's files outlive it no longer than it does.
func (h *hostTB) TempDir() string {
	d, err := os.MkdirTemp("", "ec2sim-host-")
	if err != nil {
		h.fail(err.Error())
	}
	h.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// teardown runs the host's cleanups once, newest first.
func (h *hostTB) teardown() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	h.done = true
	cs := h.cleanups
	h.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// newHost makes a test host from a server goroutine; a failure to make
// it is an error, not the end of the test.
func newHost(t testing.TB, opts ...testhost.Option) (*testhost.Host, *hostTB, error) {
	htb := &hostTB{TB: t}
	var h *testhost.Host
	done := make(chan struct{})
	go func() {
		defer close(done)
		h = testhost.New(htb, opts...)
	}()
	<-done
	if htb.err != nil {
		htb.teardown()
		return nil, nil, htb.err
	}
	return h, htb, nil
}

// startSSHDAfter starts the sshd of in's host, made without one, d after
// launch (SlowSSH), unless the instance left pending and running by then.
func (s *Server) startSSHDAfter(in *instance, d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() {
		if !s.enter() {
			return
		}
		defer s.wg.Done()
		s.mu.Lock()
		alive := in.state == Pending || in.state == Running
		s.mu.Unlock()
		if !alive {
			return
		}
		if err := in.hostTB.run(func() { in.host.StartSSHD(in.hostTB) }); err != nil {
			in.hostTB.TB.Logf("ec2sim: start sshd of %s: %v", in.id, err)
		}
	})
}

// run runs f, which may fail the host as testhost.New may, from a server
// goroutine and returns the failure.
func (h *hostTB) run(f func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
