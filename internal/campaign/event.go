package campaign

import (
	"fmt"
	"time"
)

// Kinds of Event.
const (
	EventPhase      = "phase"
	EventWarning    = "warning"
	EventRunStart   = "run_start"
	EventRunDone    = "run_done"
	EventRunSkipped = "run_skipped"
	EventDone       = "done"
	// EventWaiting says the campaign waits for the host's lock (see
	// internal/hostlock): Message names the holders and the time waited.
	EventWaiting = "waiting"
)

// Event is one progress event of a campaign. It marshals to the schema of
// `pgbench-runner ab --progress-json` (one object per line), and the
// provider decodes those lines back into it.
type Event struct {
	Event          string   `json:"event"`
	Message        string   `json:"message,omitempty"`
	Seq            int      `json:"seq,omitempty"`
	Total          int      `json:"total,omitempty"`
	Variant        string   `json:"variant,omitempty"`
	Clients        int      `json:"clients,omitempty"`
	Iteration      int      `json:"iteration,omitempty"`
	TPS            *float64 `json:"tps,omitempty"`
	Seconds        *float64 `json:"seconds,omitempty"`
	ElapsedSeconds *float64 `json:"elapsed_seconds,omitempty"`
	ETASeconds     *float64 `json:"eta_seconds,omitempty"`
	WallSeconds    *float64 `json:"wall_seconds,omitempty"`
}

// String is the event as one line for a person: what the runner prints and
// what the provider logs.
func (e Event) String() string {
	run := fmt.Sprintf("run %d/%d: %s, %d clients, iteration %d", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration)
	switch e.Event {
	case EventPhase:
		return e.Message
	case EventWarning:
		return "warning: " + e.Message
	case EventRunStart:
		return fmt.Sprintf("run %d/%d started: %s, %d clients, iteration %d", e.Seq, e.Total, e.Variant, e.Clients, e.Iteration)
	case EventRunSkipped:
		return fmt.Sprintf("%s: in the journal (%.1f tps)", run, value(e.TPS))
	case EventRunDone:
		return fmt.Sprintf("%s: %.1f tps in %.1fs, elapsed %s, ETA %s", run, value(e.TPS), value(e.Seconds),
			seconds(value(e.ElapsedSeconds)), seconds(value(e.ETASeconds)))
	case EventDone:
		return "done in " + seconds(value(e.WallSeconds))
	case EventWaiting:
		return "waiting for the host: " + e.Message
	}
	if e.Message != "" {
		return e.Event + ": " + e.Message
	}
	return e.Event
}

func ptr(f float64) *float64 { return &f }

func value(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// seconds renders a count of seconds to the nearest second: 9s, 2m5s.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
