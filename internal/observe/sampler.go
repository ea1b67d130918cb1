package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// SamplerConfig says how to sample wait events.
type SamplerConfig struct {
	// Interval is the time between two samples; 0 is DefaultInterval.
	Interval time.Duration
	// Start runs a psql session (-X -q -A -t) that reads SQL from stdin and
	// streams its output lines to onLine until stdin closes or ctx ends.
	Start func(ctx context.Context, stdin io.Reader, onLine func(string)) error
}

// DefaultInterval is how often a Sampler looks at pg_stat_activity.
const DefaultInterval = 100 * time.Millisecond

// tickMarker ends the output of one sample.
const tickMarker = "--pgbench-runner-tick--"

// sampleQuery lists the wait event of each active client backend but the
// sampler's own; "CPU" for one that waits for nothing (it runs, or waits
// for the CPU).
const sampleQuery = "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity " +
	"WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid();\n\\echo " + tickMarker + "\n"

// Sampler samples the wait events of the active backends over one
// connection, at a fixed interval, until Stop.
type Sampler struct {
	cancel context.CancelFunc
	stdin  *io.PipeWriter
	done   chan error
	stop   chan struct{}
	loop   sync.WaitGroup

	mu      sync.Mutex
	counts  map[string]int
	samples int
	ticks   int
	ack     chan struct{}
}

// StartSampler opens the session and takes a first sample, so a server
// that cannot be reached is an error here, not an empty result later.
func StartSampler(ctx context.Context, cfg SamplerConfig) (*Sampler, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	s := &Sampler{cancel: cancel, stdin: pw, done: make(chan error, 1), stop: make(chan struct{}), counts: map[string]int{}, ack: make(chan struct{}, 1)}
	go func() {
		err := cfg.Start(ctx, pr, s.line)
		pr.CloseWithError(io.EOF)
		s.done <- err
	}()
	if err := s.tick(); err != nil {
		s.abort()
		return nil, err
	}
	select {
	case <-s.ack:
	case err := <-s.done:
		cancel()
		return nil, fmt.Errorf("the sampling session ended before its first sample: %v", err)
	case <-time.After(10 * time.Second):
		s.abort()
		return nil, errors.New("the sampling session gave no first sample in 10 s")
	}
	// The first sample ran before the run: it does not count.
	s.mu.Lock()
	s.counts, s.samples, s.ticks = map[string]int{}, 0, 0
	s.mu.Unlock()
	s.loop.Add(1)
	go s.run(cfg.Interval)
	return s, nil
}

// run sends a sample each interval, skipping a tick while the previous
// sample has not answered, so a slow server never piles queries up.
func (s *Sampler) run(interval time.Duration) {
	defer s.loop.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	pending := false
	for {
		select {
		case <-s.stop:
			return
		case <-s.ack:
			pending = false
		case <-t.C:
			if pending {
				continue
			}
			if s.tick() != nil {
				return
			}
			pending = true
		}
	}
}

func (s *Sampler) tick() error {
	_, err := io.WriteString(s.stdin, sampleQuery)
	return err
}

// line takes one output line of the session.
func (s *Sampler) line(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l == tickMarker {
		s.ticks++
		select {
		case s.ack <- struct{}{}:
		default:
		}
		return
	}
	if l != "" {
		s.counts[l]++
		s.samples++
	}
}

func (s *Sampler) abort() {
	s.stdin.Close()
	s.cancel()
}

// Stop ends the session and returns the shares of the samples: wait.CPU
// and wait.<type>:<event> (each a share, 0 to 1, of all the active
// backends seen), wait.samples (the backends seen over all ticks) and
// wait.ticks (the samples taken).
func (s *Sampler) Stop() (Counters, error) {
	close(s.stop)
	s.loop.Wait()
	s.stdin.Close()
	var err error
	select {
	case err = <-s.done:
	case <-time.After(10 * time.Second):
		s.cancel()
		err = <-s.done
	}
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Counters{"wait.samples": float64(s.samples), "wait.ticks": float64(s.ticks)}
	for k, n := range s.counts {
		c["wait."+k] = float64(n) / float64(s.samples)
	}
	return c, err
}
