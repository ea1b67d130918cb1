package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing state file is success with nothing changed; it reads the host but
// writes nothing, so it needs neither root nor the kernel lock.
func TestUndoWithoutStateCLI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "absent.json")
	code, out, errOut := runCapture(t, "tune", "revert", "--state", state, "--json")
	if code != 0 {
		t.Fatalf("tune revert exit = %d, want 0; stderr %s", code, errOut)
	}
	var tr struct {
		Changes []any `json:"changes"`
		NoState bool  `json:"no_state"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("tune revert JSON %q: %v", out, err)
	}
	if tr.Changes == nil || len(tr.Changes) != 0 || !tr.NoState {
		t.Errorf("tune revert = %s, want changes [] and no_state true", out)
	}
	code, out, _ = runCapture(t, "tune", "revert", "--state", state)
	if want := "nothing to revert: no state file at " + state; code != 0 || !strings.Contains(out, want) {
		t.Errorf("tune revert text = %d %q, want 0 and %q", code, out, want)
	}

	if _, err := os.Stat("/sys/kernel/mm/hugepages/hugepages-2048kB"); err != nil {
		t.Logf("no 2 MB huge page pool here (%v); release part not run", err)
		return
	}
	code, out, errOut = runCapture(t, "hugepages", "release", "--state", state, "--json")
	if code != 0 {
		t.Fatalf("hugepages release exit = %d, want 0; stderr %s", code, errOut)
	}
	var hr map[string]any
	if err := json.Unmarshal([]byte(out), &hr); err != nil {
		t.Fatalf("hugepages release JSON %q: %v", out, err)
	}
	if hr["no_state"] != true || hr["requested"] != hr["total"] || hr["previous"] != hr["total"] {
		t.Errorf("hugepages release = %s, want no_state and requested = previous = total", out)
	}
	code, out, _ = runCapture(t, "hugepages", "release", "--state", state)
	if want := "nothing to release: no state file at " + state; code != 0 || !strings.Contains(out, want) {
		t.Errorf("hugepages release text = %d %q, want 0 and %q", code, out, want)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	if code, _, _ := runCapture(t, "hugepages", "release", "--state", bad, "--json"); code != 1 {
		t.Errorf("hugepages release of corrupt state: exit = %d, want 1", code)
	}
	if code, _, _ := runCapture(t, "tune", "revert", "--state", bad, "--json"); code != 1 {
		t.Errorf("tune revert of corrupt state: exit = %d, want 1", code)
	}
}

// A bad --overcommit-ratio is refused before anything on the host changes.
func TestHugepagesReserveBadRatioCLI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "hp.json")
	for _, ratio := range []string{"0", "101"} {
		code, out, _ := runCapture(t, "hugepages", "reserve", "--pages", "1", "--state", state, "--overcommit", "--overcommit-ratio", ratio, "--json")
		if code != 2 {
			t.Errorf("reserve --overcommit-ratio %s: exit = %d, want 2; out %s", ratio, code, out)
		}
		if _, err := os.Stat(state); err == nil {
			t.Errorf("reserve --overcommit-ratio %s wrote %s, want nothing", ratio, state)
		}
	}
}
