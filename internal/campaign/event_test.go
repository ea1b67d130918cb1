package campaign

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestEventString(t *testing.T) {
	for _, tt := range []struct {
		e    Event
		want string
	}{
		{Event{Event: EventPhase, Message: "initdb stock"}, "initdb stock"},
		{Event{Event: EventWarning, Message: "client and server share 2 CPUs"}, "warning: client and server share 2 CPUs"},
		{Event{Event: EventRunStart, Seq: 1, Total: 4, Variant: "stock", Clients: 16, Iteration: 2}, "run 1/4 started: stock, 16 clients, iteration 2"},
		{Event{Event: EventRunSkipped, Seq: 2, Total: 4, Variant: "stock", Clients: 1, Iteration: 1, TPS: ptr(99.96)}, "run 2/4: stock, 1 clients, iteration 1: in the journal (100.0 tps)"},
		{Event{Event: EventRunDone, Seq: 3, Total: 4, Variant: "p", Clients: 1, Iteration: 1, TPS: ptr(1234.5), Seconds: ptr(3.01), ElapsedSeconds: ptr(12), ETASeconds: ptr(129.6)},
			"run 3/4: p, 1 clients, iteration 1: 1234.5 tps in 3.0s, elapsed 12s, ETA 2m10s"},
		{Event{Event: EventDone, WallSeconds: ptr(25)}, "done in 25s"},
		{Event{Event: EventWaiting, Message: "campaign /x/y measuring since 12:00:01Z (pid 123), 40s so far", ElapsedSeconds: ptr(40)},
			"waiting for the host: campaign /x/y measuring since 12:00:01Z (pid 123), 40s so far"},
		{Event{Event: "later_kind", Message: "m"}, "later_kind: m"},
	} {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("%s: String = %q, want %q", tt.e.Event, got, tt.want)
		}
	}
}

// TestEventJSON checks the --progress-json schema: field names, and that
// a line decodes back to the event.
func TestEventJSON(t *testing.T) {
	e := Event{Event: EventRunDone, Seq: 1, Total: 2, Variant: "a", Clients: 4, Iteration: 1, TPS: ptr(10), Seconds: ptr(2), ElapsedSeconds: ptr(3), ETASeconds: ptr(3)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"event":"run_done","seq":1,"total":2,"variant":"a","clients":4,"iteration":1,"tps":10,"seconds":2,"elapsed_seconds":3,"eta_seconds":3}`
	if string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, e) {
		t.Errorf("decoded = %+v, %v, want %+v", back, err, e)
	}
}
