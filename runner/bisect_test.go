package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect/bisecttest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// eventLog collects the --progress-json lines of a run, logs them as they
// come, and calls stop on the first event it says to stop at.
type eventLog struct {
	t      *testing.T
	mu     sync.Mutex
	buf    bytes.Buffer
	events []campaign.Event
	stopAt func(seen []campaign.Event) bool
	stop   func()
}

func (l *eventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			return len(p), nil
		}
		var e campaign.Event
		if json.Unmarshal([]byte(line), &e) != nil || e.Event == "" {
			l.t.Logf("stderr: %s", strings.TrimSpace(line))
			continue
		}
		l.events = append(l.events, e)
		if e.Event != campaign.EventRunStart {
			l.t.Logf("%s %s", time.Now().Format("15:04:05"), e)
		}
		if l.stopAt != nil && l.stop != nil && l.stopAt(l.events) {
			l.stop()
			l.stopAt = nil
		}
	}
}

// count is the number of events of a kind whose message holds text.
func (l *eventLog) count(kind, text string) int {
	n := 0
	for _, e := range l.events {
		if e.Event == kind && strings.Contains(e.Message, text) {
			n++
		}
	}
	return n
}

// TestBisectFindsTheSlowCommit bisects a real PostgreSQL repository (the
// 15.18 tarball and six commits on top, one of which spins in
// standard_ExecutorStart) with real builds, servers and pgbench runs, and
// must name that commit. The first run is killed while it measures the
// first step; the second resumes there, with the endpoints' builds and
// runs reused. Its classes judge each step's figures against the
// endpoints': the slow commit takes throughput down by about 97%, far
// beyond what a loaded machine drifts, so it runs beside other tests.
func TestBisectFindsTheSlowCommit(t *testing.T) {
	testhost.RequireRoot(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch", "ccache", "git"} {
		testhost.RequireCommand(t, tool)
	}
	start := time.Now()
	repo := bisecttest.PostgreSQL(t)
	builds, ccache := bisecttest.Cache(t)
	t.Logf("repository: %d commits on top of %s, the slow one %s (%.0fs to make)", len(repo.Commits), repo.Base.Hash[:10], repo.Slow.Hash[:10], time.Since(start).Seconds())
	dir, err := os.MkdirTemp("", "bisect-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	out := filepath.Join(dir, "out")
	t.Cleanup(func() {
		runCapture(t, "bisect", "--out", out, "--remove-data")
		os.RemoveAll(dir)
	})
	args := []string{"bisect", "--json", "--progress-json",
		"--git", repo.Dir, "--good", repo.Base.Hash, "--bad", "master",
		"--out", out, "--git-cache", filepath.Join(dir, "git"), "--build-root", builds, "--ccache-dir", ccache,
		"--scale", "1", "--clients", "1", "--duration", "2s", "--iterations", "3", "--warmup", "1s"}
	for _, f := range pgbuildtest.ConfigureFlags {
		args = append(args, "--configure-flag="+f)
	}
	// A profiling build, as every test build is: the objects of the
	// other test builds in the shared ccache serve this one.
	args = append(args, "--cflags="+pgbuildtest.OptFlags, "--profiling")

	// Killed part way: once the endpoints are decided and the first
	// step's campaign has a finished run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &eventLog{t: t, stop: cancel, stopAt: func(seen []campaign.Event) bool {
		step := false
		for _, e := range seen {
			step = step || (e.Event == bisect.EventStepStart && e.Seq == 1)
			if step && e.Event == campaign.EventRunDone {
				return true
			}
		}
		return false
	}}
	var stdout bytes.Buffer
	code := run(ctx, args, &stdout, first)
	killedAt := time.Now()
	if code != exitInterrupted {
		t.Fatalf("interrupted bisect: exit %d, want %d; stdout %s", code, exitInterrupted, stdout.String())
	}
	if first.count(bisect.EventStepDone, "endpoints confirmed") != 1 {
		t.Fatalf("the interrupted bisect did not confirm the endpoints first")
	}

	second := &eventLog{t: t}
	stdout.Reset()
	code = run(context.Background(), args, &stdout, second)
	if code != exitOK {
		t.Fatalf("resumed bisect: exit %d, want 0; stdout %s", code, stdout.String())
	}
	res, err := bisect.DecodeResult(stdout.Bytes(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != bisect.OutcomeFirstBad || res.FirstBad == nil || res.FirstBad.Hash != repo.Slow.Hash {
		t.Fatalf("outcome %s, first bad %+v; want %s %q\n%s", res.Outcome, res.FirstBad, repo.Slow.Hash, repo.Slow.Subject, res.Answer)
	}
	if res.FirstBad.Subject != bisecttest.SlowSubject || res.FirstBad.AuthorDate.IsZero() {
		t.Errorf("first bad commit %+v: want its subject and author date", res.FirstBad)
	}

	// The endpoints differ in the direction asked, by far more than the
	// noise: every query spins.
	ep := res.Endpoints
	if ep.Outcome != bisect.EndpointsConfirmed || len(ep.Cells) != 1 || ep.Cells[0].BadVsGood.DeltaPct > -20 || ep.Cells[0].BadVsGood.CIHighPct == nil {
		t.Errorf("endpoints %+v: want bad confirmed slower than good by more than 20%%", ep)
	}
	// The commits before the slow one are good, it and those after bad:
	// every step's class agrees with where it stands.
	slowAt := 0
	for i, c := range repo.Commits {
		if c.Hash == repo.Slow.Hash {
			slowAt = i + 1
		}
	}
	for _, st := range res.Steps {
		want := bisect.ClassGood
		if st.Position >= slowAt {
			want = bisect.ClassBad
		}
		if st.Class != want || st.Commit.Hash != repo.Commits[st.Position-1].Hash {
			t.Errorf("step %d: %s at position %d is %s, want %s", st.N, st.Commit.Short(), st.Position, st.Class, want)
		}
		for _, sc := range st.Cells {
			if sc.VsGood.CILowPct == nil || sc.VsBad.CILowPct == nil {
				t.Errorf("step %d: no interval (%s, %s)", st.N, sc.VsGood, sc.VsBad)
			}
		}
		if !st.Build.CCache || st.Build.BinDir == "" {
			t.Errorf("step %d: build %+v, want a ccache build", st.N, st.Build)
		}
	}
	// Built in one source tree: every build after the first that was not
	// reused is incremental, and its time is in bisect.json to compare
	// with the first's.
	if !res.Build.Incremental {
		t.Errorf("build settings %+v: want incremental", res.Build)
	}
	later := []bisect.Build{ep.Bad}
	for _, st := range res.Steps {
		later = append(later, st.Build)
	}
	for i, bl := range later {
		if !ep.Good.Cached && !bl.Cached && (!bl.Incremental || bl.Seconds <= 0 || bl.Tree == "") {
			t.Errorf("build %d after good: %+v, want an incremental build with its time", i+1, bl)
		}
		t.Logf("build %d after good: %.1fs (incremental %v, reused %v); good: %.1fs (reused %v)", i+1, bl.Seconds, bl.Incremental, bl.Cached, ep.Good.Seconds, ep.Good.Cached)
	}
	if len(res.Steps) < 2 || len(res.Steps) > 3 {
		t.Errorf("%d steps for %d commits, want 2 or 3 (log2)", len(res.Steps), res.Commits)
	}

	// Resumed, not started over: the endpoints come from the journal and
	// their campaign's runs all ran before the kill; the first step's
	// campaign kept its finished runs.
	if second.count(campaign.EventPhase, "endpoints: confirmed, from the journal") != 1 {
		t.Errorf("the resumed bisect did not take the endpoints from its journal")
	}
	if second.count(campaign.EventPhase, "build "+repo.Base.Hash[:10]+": configure") != 0 {
		t.Errorf("the resumed bisect built good again")
	}
	skipped := 0
	for _, e := range second.events {
		if e.Event == campaign.EventRunSkipped {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("the resumed bisect ran every run of the interrupted step again: no run_skipped event")
	}
	if !res.StartedAt.Before(killedAt) {
		t.Errorf("started at %s, after the kill at %s: the journal was not resumed", res.StartedAt, killedAt)
	}

	// The ETA counts the steps left.
	sawETA := false
	for _, e := range append(first.events, second.events...) {
		if e.Event == bisect.EventStepDone && e.ETASeconds != nil && e.Total >= e.Seq {
			sawETA = true
		}
	}
	if !sawETA {
		t.Errorf("no step_done event with an ETA")
	}

	md, err := os.ReadFile(filepath.Join(out, bisect.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**First bad commit: `" + repo.Slow.Hash + "` " + bisecttest.SlowSubject, "## Steps", "| 1 | `", "pgbench-runner bisect --git " + repo.Dir} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md does not contain %q:\n%s", want, md)
		}
	}
	if strings.Contains(strings.Join(res.Command, " "), "--progress-json") || res.Command[1] != "bisect" {
		t.Errorf("reproduce command %q", res.Command)
	}
	t.Logf("bisect: %d steps in %.0fs (builds %.0fs, measuring %.0fs), whole test %.0fs\n%s",
		len(res.Steps), res.WallSeconds, res.BuildSeconds, res.MeasureSeconds, time.Since(start).Seconds(), md)
}

// Every way the input gives nothing to bisect is an error before anything
// is built or measured, and no bisect directory is left behind.
func TestBisectBadInput(t *testing.T) {
	repo, commits := bisecttest.Small(t, 4)
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	base := []string{"bisect", "--json", "--out", out, "--git-cache", cache, "--git", repo}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, repo)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"bisect", "--git", repo, "--good", "c1", "--bad", "c4"}, "--out is required"},
		{"no repository", []string{"bisect", "--out", out, "--good", "c1", "--bad", "c4"}, "--git: the git repository to bisect is required"},
		{"no refs", base, "--good: the good commit is required"},
		{"same refs", append(base, "--good", "c2", "--bad", "c2"), `good and bad are both "c2"`},
		{"variants", append(base, "--good", "c1", "--bad", "c4", "--variant", "name=a,bin=/x"), "a bisect makes its own variants"},
		{"too few iterations", append(base, "--good", "c1", "--bad", "c4", "--iterations", "2"), "2 iterations per variant give no test"},
		{"unknown ref", append(base, "--good", "v99", "--bad", "c4"), `--good: "v99" names no commit`},
		{"reversed", append(base, "--good", "c4", "--bad", "c1"), "swap good and bad"},
		{"one commit", append(base, "--good", "c3", "--bad", "c4"), "holds one commit, " + commits[3].Hash[:10]},
		{"same commit", append(base, "--good", "c4", "--bad", commits[3].Hash), "are the same commit"},
		// A relative path is the repository there, not under the cache.
		{"relative path", []string{"bisect", "--out", out, "--git-cache", cache, "--git", rel, "--good", "c3", "--bad", "c4"}, "holds one commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCapture(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stdout %s, stderr %s)", code, exitUsage, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("output %s%s does not contain %q", stdout, stderr, tt.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want no bisect directory after bad input", out, err)
	}
}

// --remove-data removes the data directories and, with --remove-builds,
// the builds the bisect made, never one it reused; then it keeps or removes
// the reports.
func TestBisectRemoveData(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "b")
	data := filepath.Join(out, "data", "commit")
	os.MkdirAll(data, 0o700)
	os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("15\n"), 0o600)
	stamp := func(prefix, key string) {
		os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
		b, _ := json.Marshal(pgbuild.Result{BuildKey: key, Prefix: prefix, BinDir: filepath.Join(prefix, "bin")})
		os.WriteFile(filepath.Join(prefix, pgbuild.StampName), b, 0o644)
	}
	made, reused := filepath.Join(root, "builds", "made"), filepath.Join(root, "builds", "reused")
	stamp(made, "k1")
	stamp(reused, "k2")
	journal := `{"header":{"key":"x","definition":[],"good":"a","bad":"b","started_at":"2025-01-01T00:00:00Z"}}
{"build":{"commit":"a","build":{"build_key":"k1","bin_dir":"` + made + `/bin","seconds":90,"cached":false,"ccache":true}}}
{"build":{"commit":"b","build":{"build_key":"k2","bin_dir":"` + reused + `/bin","seconds":0.1,"cached":true,"ccache":true}}}
{"build":{"commit":"c","build":{"seconds":0,"cached":false,"ccache":true,"error":"make failed"}}}
`
	os.WriteFile(filepath.Join(out, bisect.JournalFile), []byte(journal), 0o644)
	kept := filepath.Join(root, "b.destroyed")
	for i, want := range []string{data + "," + made, ""} {
		code, stdout, stderr := runCapture(t, "bisect", "--json", "--out", out, "--remove-data", "--remove-builds", "--keep-reports-as", kept)
		if code != exitOK {
			t.Fatalf("call %d: exit %d, stderr %s", i+1, code, stderr)
		}
		var v bisectRemoved
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(v.Removed, ","); got != want {
			t.Errorf("call %d: removed %q, want %q", i+1, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(reused, pgbuild.StampName)); err != nil {
		t.Errorf("a reused build was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, bisect.JournalFile)); err != nil {
		t.Errorf("reports not kept in %s: %v", kept, err)
	}
	if code, _, _ := runCapture(t, "bisect", "--out", out, "--remove-builds"); code != exitUsage {
		t.Errorf("--remove-builds without --remove-data: exit %d, want %d", code, exitUsage)
	}
}
