package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestTuneApplyRevertCLI(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	const thpFile = "/sys/kernel/mm/transparent_hugepage/enabled"
	knobs := []string{thpFile, "/proc/sys/kernel/numa_balancing"}
	before := map[string]string{}
	for _, f := range knobs {
		b, err := os.ReadFile(f)
		if err != nil {
			testhost.Skip(t, "no %s: %v", f, err)
		}
		before[f] = string(b)
	}
	state := filepath.Join(t.TempDir(), "tune.json")
	code, out, errOut := runCapture(t, "tune", "apply", "--state", state, "--thp", "always", "--numa-balancing", "on", "--governor", "performance", "--json")
	if code != 0 {
		t.Fatalf("apply exit = %d, want 0; stderr %s", code, errOut)
	}
	var res struct {
		Changes []struct{ Knob, Status string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 3 {
		t.Errorf("changes = %+v, want 3", res.Changes)
	}
	if code, _, errOut := runCapture(t, "tune", "revert", "--state", state, "--json"); code != 0 {
		t.Fatalf("revert exit = %d; stderr %s", code, errOut)
	}
	for f, want := range before {
		if b, _ := os.ReadFile(f); string(b) != want {
			t.Errorf("%s after revert = %q, want %q", f, b, want)
		}
	}
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err != nil {
		if code, _, _ := runCapture(t, "tune", "apply", "--state", state, "--governor", "performance", "--strict"); code != 3 {
			t.Errorf("strict apply of a missing governor: exit = %d, want 3", code)
		}
	}
}
