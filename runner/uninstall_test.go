package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tune"
)

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeInstall lays out what pgbench_host leaves in an install directory: the
// runner, a tuning state file whose knob is a plain file (so no kernel knob
// is touched), and an abandoned campaign with a data directory.
func fakeInstall(t *testing.T) (dir, knob, out string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "pgbench")
	writeFile(t, runnerclient.BinaryPath(dir), "#!/bin/sh\n")
	knob = filepath.Join(t.TempDir(), "numa_balancing")
	writeFile(t, knob, "0\n")
	st, _ := json.Marshal(tune.State{Knobs: map[string][]tune.FileValue{tune.NUMABalancing: {{Path: knob, Value: "1"}}}})
	writeFile(t, runnerclient.TuneStatePath(dir), string(st))
	out = campaign.Dir(dir, "abc")
	writeFile(t, filepath.Join(out, campaign.JournalFile), "{}\n")
	writeFile(t, filepath.Join(out, "summary.md"), "report\n")
	writeFile(t, filepath.Join(out, "data", "a", "PG_VERSION"), "15\n")
	// A directory without a journal is not a campaign: left alone.
	writeFile(t, filepath.Join(campaign.Root(dir), "other", "data", "a", "PG_VERSION"), "15\n")
	return dir, knob, out
}

func uninstallJSON(t *testing.T, args ...string) runnerclient.Uninstalled {
	t.Helper()
	code, stdout, stderr := runCapture(t, append([]string{"uninstall", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("uninstall %v exit %d, stdout %s, stderr %s", args, code, stdout, stderr)
	}
	var res runnerclient.Uninstalled
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("uninstall --json printed %q: %v", stdout, err)
	}
	return res
}

func TestUninstallRevertsRemovesAndIsIdempotent(t *testing.T) {
	dir, knob, out := fakeInstall(t)
	res := uninstallJSON(t, "--dir", dir, "--remove-dir")
	if got, _ := os.ReadFile(knob); string(got) != "1\n" {
		t.Errorf("knob after uninstall = %q, want the recorded previous value 1", got)
	}
	if !reflect.DeepEqual(res.TuningReverted, []string{tune.NUMABalancing}) {
		t.Errorf("tuning_reverted = %v, want [%s]", res.TuningReverted, tune.NUMABalancing)
	}
	if len(res.Campaigns) != 1 || res.Campaigns[0].Dir != out || len(res.Campaigns[0].Removed) != 1 {
		t.Errorf("campaigns = %+v, want the data of %s removed", res.Campaigns, out)
	}
	if _, err := os.Stat(filepath.Join(out, "data")); !os.IsNotExist(err) {
		t.Errorf("campaign data after uninstall: stat err = %v, want not exist", err)
	}
	for _, kept := range []string{filepath.Join(out, campaign.JournalFile), filepath.Join(out, "summary.md"),
		filepath.Join(campaign.Root(dir), "other", "data", "a", "PG_VERSION")} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s after uninstall: %v, want it kept", kept, err)
		}
	}
	// The revert deletes the state file itself.
	if _, err := os.Stat(runnerclient.TuneStatePath(dir)); !os.IsNotExist(err) {
		t.Errorf("tuning state after uninstall: stat err = %v, want not exist", err)
	}
	if want := []string{runnerclient.BinaryPath(dir)}; !reflect.DeepEqual(res.Removed, want) {
		t.Errorf("removed = %v, want %v", res.Removed, want)
	}
	if res.DirRemoved || res.DirKept == "" {
		t.Errorf("dir_removed = %v, dir_kept = %q; want the directory with reports kept, saying why", res.DirRemoved, res.DirKept)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings = %v, want none", res.Warnings)
	}

	// Again: nothing left to do, and no error.
	again := uninstallJSON(t, "--dir", dir, "--remove-dir")
	if len(again.TuningReverted) != 0 || len(again.Removed) != 0 || len(again.Warnings) != 0 {
		t.Errorf("second uninstall = %+v, want nothing reverted, removed or warned", again)
	}

	// Without the reports (destroyed campaigns remove theirs, leaving an
	// empty campaigns directory), --remove-dir takes the directory too;
	// once it is gone, uninstall still succeeds.
	if err := os.RemoveAll(campaign.Root(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(campaign.Root(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// A build a bisect was told to keep keeps the directory; once it is
	// gone (destroyed bisects remove theirs, leaving an empty build
	// directory), the directory goes.
	kept := filepath.Join(runnerclient.BisectBuildRoot(dir), "0123abcd", "bin", "postgres")
	writeFile(t, kept, "x")
	if res := uninstallJSON(t, "--dir", dir, "--remove-dir"); res.DirRemoved || res.DirKept == "" {
		t.Errorf("uninstall beside a kept bisect build: dir_removed = %v, dir_kept = %q; want the directory kept, saying why", res.DirRemoved, res.DirKept)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("kept bisect build after uninstall: %v", err)
	}
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(kept))); err != nil {
		t.Fatal(err)
	}
	if res := uninstallJSON(t, "--dir", dir, "--remove-dir"); !res.DirRemoved {
		t.Errorf("uninstall of an empty directory: dir_removed = false (%q), want true", res.DirKept)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("install dir after uninstall: stat err = %v, want not exist", err)
	}
	uninstallJSON(t, "--dir", dir, "--remove-dir")
}

// Without --remove-dir the directory stays, even when empty: it may have
// been there before pgbench_host.
func TestUninstallKeepsDirByDefault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pgbench")
	writeFile(t, runnerclient.BinaryPath(dir), "x")
	res := uninstallJSON(t, "--dir", dir)
	if res.DirRemoved {
		t.Errorf("dir_removed = true without --remove-dir")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("install dir after uninstall without --remove-dir: %v, want it kept", err)
	}
}

// Undoing a failed install leaves campaigns alone: they may belong to
// benchmarks still in state.
func TestUninstallKeepCampaigns(t *testing.T) {
	dir, _, out := fakeInstall(t)
	res := uninstallJSON(t, "--dir", dir, "--remove-dir", "--keep-campaigns")
	if len(res.Campaigns) != 0 {
		t.Errorf("campaigns = %+v with --keep-campaigns, want none", res.Campaigns)
	}
	if _, err := os.Stat(filepath.Join(out, "data", "a")); err != nil {
		t.Errorf("campaign data after uninstall --keep-campaigns: %v, want it kept", err)
	}
	if _, err := os.Stat(runnerclient.BinaryPath(dir)); !os.IsNotExist(err) {
		t.Errorf("runner after uninstall: stat err = %v, want not exist", err)
	}
}

// A tuning revert that fails leaves everything in place, so the destroy
// can be retried.
func TestUninstallRevertFailureKeepsRunner(t *testing.T) {
	dir, knob, out := fakeInstall(t)
	if err := os.Remove(knob); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCapture(t, "uninstall", "--json", "--dir", dir, "--remove-dir")
	if code != exitFailure {
		t.Fatalf("uninstall with an unrevertable knob: exit %d, want %d", code, exitFailure)
	}
	var doc errorDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Error.Kind != runnerclient.KindFailure {
		t.Fatalf("error document = %q (%v), want kind failure", stdout, err)
	}
	for _, f := range []string{runnerclient.BinaryPath(dir), runnerclient.TuneStatePath(dir), filepath.Join(out, "data", "a")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s after a failed revert: %v, want it kept", f, err)
		}
	}
}

func TestUninstallUsage(t *testing.T) {
	for _, args := range [][]string{{"--dir", "relative/dir"}, {"--dir", "/x", "extra"}} {
		if code, _, _ := runCapture(t, append([]string{"uninstall", "--json"}, args...)...); code != exitUsage {
			t.Errorf("uninstall %v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
