package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

var allProgs = []string{"postgres", "pgbench", "initdb", "pg_ctl", "psql"}

func TestABBadInput(t *testing.T) {
	bin := fakeBin(t, allProgs...)
	noPostgres := fakeBin(t, "pgbench", "initdb", "pg_ctl", "psql")
	out := filepath.Join(t.TempDir(), "out")
	a := "name=a,bin=" + bin
	b := "name=b,bin=" + bin
	base := []string{"ab", "--out", out, "--duration", "2s"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"ab", "--variant", a, "--variant", b}, "--out is required"},
		{"no variants", base, "no variants"},
		{"one variant", append(base[:len(base):len(base)], "--variant", a), "only one variant (a)"},
		{"duplicate names", append(base[:len(base):len(base)], "--variant", a, "--variant", a), `variant name "a" is used twice`},
		{"unknown mode", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--mode", "nope"), `--mode: unknown pgbench mode "nope"`},
		{"custom without script", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--mode", "custom"), "--mode custom needs --script"},
		{"clients zero", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--clients", "1,0"), "client count 0 must be at least 1"},
		{"clients negative", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--clients", "-4"), "client count -4"},
		{"clients text", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--clients", "1,many"), `client count "many" is not a number`},
		{"bin without postgres", append(base[:len(base):len(base)], "--variant", a, "--variant", "name=b,bin="+noPostgres), "variant b: bin dir " + noPostgres + " has no postgres"},
		{"duration zero", []string{"ab", "--out", out, "--variant", a, "--variant", b, "--duration", "0s"}, "--duration: 0s must be positive"},
		{"duration fraction", []string{"ab", "--out", out, "--variant", a, "--variant", b, "--duration", "1500ms"}, "whole seconds"},
		{"iterations zero", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--iterations", "0"), "--iterations: 0 must be at least 1"},
		{"bad huge_pages", append(base[:len(base):len(base)], "--variant", a, "--variant", b+",huge_pages=maybe"), `variant b: huge_pages="maybe"`},
		{"bad numa", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--server-numa", "cpunodebind"), "--server-numa"},
		{"unknown numa option", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--client-numa", "nodes=0"), `unknown numactl option "nodes"`},
		{"bad protocol", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--protocol", "binary"), `--protocol: unknown pgbench protocol "binary"`},
		{"bad order", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--order", "reverse"), `--order: "reverse"`},
		{"seed without randomized", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--seed", "3"), "--seed only applies"},
		{"bad variant key", append(base[:len(base):len(base)], "--variant", a, "--variant", b+",colour=red"), `unknown key "colour"`},
		{"variant without bin", append(base[:len(base):len(base)], "--variant", a, "--variant", "name=b"), "bin= is missing"},
		{"bad set", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--set", "shared_buffers"), `--set "shared_buffers"`},
		{"bad threads", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--threads", "0"), `--threads: "0"`},
		{"huge_pages via set", append(base[:len(base):len(base)], "--variant", a, "--variant", b, "--set", "huge_pages=on"), "huge_pages is per variant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCapture(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
	// Nothing started: no campaign directory was made.
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want it not to exist after bad input", out, err)
	}
}

func TestABBadInputJSON(t *testing.T) {
	code, stdout, _ := runCapture(t, "ab", "--json", "--out", t.TempDir(), "--variant", "name=a,bin=/nonexistent")
	if code != exitUsage {
		t.Fatalf("exit code = %d, want %d", code, exitUsage)
	}
	var doc errorDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not a JSON error document: %v\n%s", err, stdout)
	}
	if doc.Error.Kind != "usage" || !strings.Contains(doc.Error.Message, "only one variant") {
		t.Errorf("error = %+v, want kind usage naming the single variant", doc.Error)
	}
}

func TestABRemoveDataIdempotent(t *testing.T) {
	out := t.TempDir()
	data := filepath.Join(out, "data", "stock")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("15\n"), 0o600)
	os.WriteFile(filepath.Join(out, "results.json"), []byte("{}"), 0o644)
	for i, want := range []string{data, ""} {
		code, stdout, stderr := runCapture(t, "ab", "--out", out, "--remove-data", "--json")
		if code != exitOK {
			t.Fatalf("call %d: exit code = %d, want 0 (stderr %q)", i+1, code, stderr)
		}
		var v struct{ Removed []string }
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("call %d: %v: %s", i+1, err, stdout)
		}
		got := strings.Join(v.Removed, ",")
		if got != want {
			t.Errorf("call %d: removed = %q, want %q", i+1, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("reports must survive --remove-data: %v", err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want it removed", data, err)
	}
}

// TestABRemoveDataKeepsReports is what pgbench_ab_benchmark's destroy runs:
// the data directories go, the campaign directory with its reports moves
// aside, and a second call finds nothing to do.
func TestABRemoveDataKeepsReports(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "c")
	kept := filepath.Join(root, "c.destroyed-20260102T030405Z")
	data := filepath.Join(out, "data", "stock")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("15\n"), 0o600)
	os.WriteFile(filepath.Join(out, "results.json"), []byte("{}"), 0o644)
	for i, want := range []struct{ removed, kept string }{{data, kept}, {"", ""}} {
		code, stdout, stderr := runCapture(t, "ab", "--out", out, "--remove-data", "--keep-reports-as", kept, "--json")
		if code != exitOK {
			t.Fatalf("call %d: exit code = %d, want 0 (stderr %q)", i+1, code, stderr)
		}
		var v struct {
			Removed []string
			Kept    string `json:"reports_kept_in"`
		}
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("call %d: %v: %s", i+1, err, stdout)
		}
		if got := strings.Join(v.Removed, ","); got != want.removed || v.Kept != want.kept {
			t.Errorf("call %d: removed %q, kept in %q; want %q, %q", i+1, got, v.Kept, want.removed, want.kept)
		}
	}
	if _, err := os.Stat(filepath.Join(kept, "results.json")); err != nil {
		t.Errorf("reports must be kept in %s: %v", kept, err)
	}
	if _, err := os.Stat(filepath.Join(kept, "data", "stock")); !os.IsNotExist(err) {
		t.Errorf("data directory in the kept reports: stat = %v, want it removed", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want it moved away", out, err)
	}

	// An existing destination is never overwritten.
	os.MkdirAll(out, 0o755)
	if code, _, stderr := runCapture(t, "ab", "--out", out, "--remove-data", "--keep-reports-as", kept); code != exitFailure || !strings.Contains(stderr, "already exists") {
		t.Errorf("move onto %s: exit %d, stderr %q; want a failure saying it exists", kept, code, stderr)
	}
	if code, _, stderr := runCapture(t, "ab", "--out", out, "--keep-reports-as", kept); code != exitUsage {
		t.Errorf("--keep-reports-as without --remove-data: exit %d (stderr %q), want %d", code, stderr, exitUsage)
	}
}

// TestABVariantSetReachesConfig decodes the command line the provider
// sends for settings no older form could carry.
func TestABVariantSetReachesConfig(t *testing.T) {
	var o output
	var cfg campaign.Config
	var f abFlags
	fs := abCmd{}.flagSet(&o, &cfg, &f)
	const odd = `a=b, c;d 'q' "dq" \ ünï`
	if err := fs.Parse([]string{"--out=/o", `--variant=name=a,bin=/opt/pg\,x/bin,huge_pages=off`, "--variant=name=b,bin=/x",
		"--variant-set=a:custom.note=" + odd}); err != nil {
		t.Fatal(err)
	}
	if err := f.campaign.Decode(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Variants[0].Settings["custom.note"]; got != odd {
		t.Errorf("setting = %q, want %q", got, odd)
	}
	if got := cfg.Variants[0].BinDir; got != "/opt/pg,x/bin" {
		t.Errorf("bin dir = %q, want /opt/pg,x/bin", got)
	}
}

func TestABTextProgress(t *testing.T) {
	var b strings.Builder
	p := textProgress(&b)
	tps, secs := 1234.5, 3.0
	for _, e := range []campaign.Event{
		{Event: campaign.EventPhase, Message: "initdb a"},
		{Event: campaign.EventRunStart, Seq: 1, Total: 2, Variant: "a", Clients: 1, Iteration: 1},
		{Event: campaign.EventRunDone, Seq: 1, Total: 2, Variant: "a", Clients: 1, Iteration: 1, TPS: &tps, Seconds: &secs, ElapsedSeconds: &secs, ETASeconds: &secs},
		{Event: campaign.EventWarning, Message: "drift"},
		{Event: campaign.EventDone, WallSeconds: &secs},
	} {
		p(e)
	}
	want := "==> initdb a\nrun 1/2: a, 1 clients, iteration 1: 1234.5 tps in 3.0s, elapsed 3s, ETA 3s\nwarning: drift\ndone in 3s\n"
	if b.String() != want {
		t.Errorf("text progress =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestReproduceDropsReportingFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "o", "--json", "--progress-json", "--variant", "name=a,bin=b"}, "--out o --variant name=a,bin=b"},
		{[]string{"--fresh=true", "--json=true", "--progress-json=true", "--out=o", "--resume", "--remove-data", "--clients", "1,4"}, "--out=o --clients 1,4"},
		{[]string{"--remove-data", "--keep-reports-as", "kept", "--out", "o"}, "--out o"},
		{[]string{"--wait-host", "10m", "--out", "o", "--wait-host=1h"}, "--out o"},
		{[]string{"--resume=false", "--fresh=false", "--iterations", "7"}, "--iterations 7"},
		// A value that looks like a dropped flag is still a value.
		{[]string{"--set", "--json", "--out", "o"}, "--set --json --out o"},
		{[]string{"--order", "randomized", "--seed", "42", "--checkpoint-before"}, "--order randomized --seed 42 --checkpoint-before"},
	} {
		var o output
		var cfg campaign.Config
		var f abFlags
		fs := abCmd{}.flagSet(&o, &cfg, &f)
		got := strings.Join(reproduce(fs, tt.args), " ")
		want := "pgbench-runner ab " + tt.want
		if got != want {
			t.Errorf("reproduce(%q) = %q, want %q", tt.args, got, want)
		}
	}
}

func TestIterationsAndWarmupDefaults(t *testing.T) {
	var o output
	var cfg campaign.Config
	var f abFlags
	fs := abCmd{}.flagSet(&o, &cfg, &f)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Iterations != 10 || cfg.IterationsAuto || !cfg.WarmupAuto {
		t.Errorf("defaults: --iterations = %d (auto %v), --warmup auto %v; want 10 and auto", cfg.Iterations, cfg.IterationsAuto, cfg.WarmupAuto)
	}
}

// TestABEndToEndJSON runs a tiny real campaign through the command line
// the provider uses: --json gives exactly results.json on stdout and
// --progress-json gives one JSON event per stderr line.
func TestABEndToEndJSON(t *testing.T) {
	const bin = "/usr/lib/postgresql/15/bin"
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", bin)
	dir, err := os.MkdirTemp("", "ab-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	out := filepath.Join(dir, "out")
	t.Cleanup(func() {
		runCapture(t, "ab", "--out", out, "--remove-data")
		os.RemoveAll(dir)
	})
	code, stdout, stderr := runCapture(t, "ab", "--json", "--progress-json", "--out", out,
		"--variant", "name=stock,bin="+bin+",huge_pages=off", "--variant", "name=wm,bin="+bin+",set=work_mem=8MB,huge_pages=off",
		"--scale", "1", "--clients", "1", "--duration", "1s", "--iterations", "1",
		"--warmup", "1s", "--checkpoint-before", "--restart", "run")
	if code != exitOK {
		t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, stderr)
	}
	res, err := report.DecodeResults([]byte(stdout), "stdout")
	if err != nil {
		t.Fatalf("stdout is not results.json: %v\n%s", err, stdout)
	}
	if len(res.Runs) != 2 || res.Runs[0].Variant != "stock" || res.Runs[1].Variant != "wm" {
		t.Fatalf("runs = %+v, want stock then wm", res.Runs)
	}
	if w := res.Workload; w.WarmupSeconds != 1 || !w.CheckpointBefore || w.Restart != "run" {
		t.Errorf("workload = %+v, want warmup 1 s, checkpoint before, restart run", w)
	}
	for _, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(out, r.LogDir, "warmup.stdout"))
		if err != nil || !strings.Contains(string(b), "tps = ") {
			t.Errorf("run %d: warmup output = %q, %v, want a pgbench summary", r.Seq, b, err)
		}
	}
	file, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	fromFile, _ := report.DecodeResults(file, "results.json")
	if fromFile == nil || len(fromFile.Runs) != 2 {
		t.Errorf("results.json on disk has %v, want the same 2 runs", fromFile)
	}
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("stderr line %q is not a JSON event: %v", line, err)
			continue
		}
		kinds[ev["event"].(string)]++
		if ev["event"] == campaign.EventRunDone {
			for _, k := range []string{"seq", "total", "variant", "clients", "iteration", "tps", "seconds", "elapsed_seconds", "eta_seconds"} {
				if _, ok := ev[k]; !ok {
					t.Errorf("run_done event %s has no %q", line, k)
				}
			}
		}
	}
	if kinds[campaign.EventRunStart] != 2 || kinds[campaign.EventRunDone] != 2 || kinds[campaign.EventDone] != 1 || kinds[campaign.EventPhase] == 0 {
		t.Errorf("events = %v, want 2 run_start, 2 run_done, phases and one done", kinds)
	}
}

// TestABProfileNeedsPerf checks that a profiling campaign on a host whose
// perf cannot record stops before anything starts, with exit 3 and what to
// install, and leaves no campaign directory behind.
func TestABProfileNeedsPerf(t *testing.T) {
	tools := t.TempDir()
	// What Debian's /usr/bin/perf wrapper says when no perf matches the kernel.
	script := "#!/bin/sh\necho 'WARNING: perf not found for kernel 6.18' >&2\nexit 2\n"
	if err := os.WriteFile(filepath.Join(tools, "perf"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", tools+":"+os.Getenv("PATH"))
	bin := fakeBin(t, allProgs...)
	out := filepath.Join(t.TempDir(), "c")
	code, stdout, stderr := runCapture(t, "ab", "--json", "--out", out, "--variant", "name=a,bin="+bin, "--variant", "name=b,bin="+bin,
		"--clients", "1", "--profile", "one-per-cell")
	if code != exitUnmet {
		t.Fatalf("exit code = %d, want %d (stdout %s, stderr %s)", code, exitUnmet, stdout, stderr)
	}
	if !strings.Contains(stdout, "linux-perf") || !strings.Contains(stdout, "perf not found for kernel") {
		t.Errorf("the error does not say what is wrong and what to install: %s", stdout)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the campaign directory was made (%v): nothing may start before perf is known to work", err)
	}
}
