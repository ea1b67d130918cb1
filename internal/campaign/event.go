package campaign

import (
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"

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
	NOPM           *float64 `json:"nopm,omitempty"` // TPC-C runs
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
		return fmt.Sprintf("%s: in the journal (%s)", run, e.rate())
	case EventRunDone:
		return fmt.Sprintf("%s: %s in %.1fs, elapsed %s, ETA %s", run, e.rate(), value(e.Seconds),
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

// rate is a run's throughput: NOPM for TPC-C, else TPS.
func (e Event) rate() string {
	if e.NOPM != nil {
		return fmt.Sprintf("%.0f NOPM, %.1f tps", *e.NOPM, value(e.TPS))
	}
	return fmt.Sprintf("%.1f tps", value(e.TPS))
}

func ptr(f float64) *float64 { return &f }

// nopmPtr is a run's NOPM for an event; nil for pgbench runs.
func nopmPtr(r report.Run) *float64 {
	if r.NOPM == 0 {
		return nil
	}
	return ptr(r.NOPM)
}

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
