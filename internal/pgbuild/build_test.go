package pgbuild_test

// The tests of real builds from the PostgreSQL source tarball, through
// pgbuildtest (which imports pgbuild, so they live outside the package).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
)

// testPatch changes the boot value of bgwriter_delay from 200 to 250 ms;
// initdb leaves it commented out, so `postgres -C` shows the boot value.
const testPatch = "testdata/bgwriter-delay.patch"

// scratchRoot makes a directory the postgres user can traverse.
func scratchRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgbuild-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testOpts are the options of the patched test build into prefix, through
// the test builds' shared ccache (pgbuildtest.Options).
func testOpts(t *testing.T, prefix string) pgbuild.Options {
	abs, err := filepath.Abs(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	return pgbuildtest.Options(t, prefix, abs)
}

// The one real build of a test run, shared by the tests that need it.
var (
	shared     sync.Once
	sharedRoot string
	sharedRes  pgbuild.Result
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRoot != "" {
		os.RemoveAll(sharedRoot)
	}
	os.Exit(code)
}

// sharedBuild is the patched build in a prefix of its own: every phase runs
// (the prefix is new), the compiler's work comes from the shared ccache
// when an earlier run left it there.
func sharedBuild(t *testing.T) pgbuild.Result {
	t.Helper()
	pgbuildtest.RequireTools(t)
	shared.Do(func() {
		dir, err := os.MkdirTemp("", "pgbuild-shared-")
		if err != nil {
			sharedErr = err
			return
		}
		os.Chmod(dir, 0o755)
		sharedRoot = dir
		opts := testOpts(t, filepath.Join(dir, "pg"))
		phases := map[string]bool{}
		// The site file of configure's results: kept by this build's
		// configure, or read by it when an earlier run kept one.
		var site string
		sharedRes, sharedErr = pgbuild.Build(context.Background(), opts, func(phase, line string) {
			phases[phase] = true
			if phase != "configure" {
				return
			}
			if _, path, ok := strings.Cut(line, "reusing the results of an earlier configure"); ok {
				site = path[strings.LastIndex(path, ": ")+2:]
			}
			if _, path, ok := strings.Cut(line, " configure results in "); ok && strings.HasPrefix(line, "kept ") {
				site = path
			}
		})
		if sharedErr == nil {
			for _, p := range []string{"extract", "patch", "configure", "make", "install"} {
				if !phases[p] {
					sharedErr = fmt.Errorf("no progress for phase %s", p)
				}
			}
		}
		// PostgreSQL 15's configure caches about 270 answers in config.log.
		if sharedErr == nil {
			sharedErr = checkSite(site, 200)
		}
		t.Logf("build from tarball: %.1fs", sharedRes.Seconds)
	})
	if sharedErr != nil {
		t.Fatalf("shared build: %v", sharedErr)
	}
	return sharedRes
}

// checkSite is nil when site, the kept configure results a build named,
// holds at least min answers.
func checkSite(site string, min int) error {
	if site == "" {
		return fmt.Errorf("the build neither kept nor read configure's results")
	}
	b, err := os.ReadFile(site)
	if err != nil {
		return err
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "test ") {
			n++
		}
	}
	if n < min {
		return fmt.Errorf("%s holds %d configure results, want the %d and more that config.log lists", site, n, min)
	}
	return nil
}

func TestBuildPatchedTarball(t *testing.T) {
	r := sharedBuild(t)
	if r.Cached {
		t.Fatalf("first build cached = true, want false")
	}
	if got, want := r.Version, "15.18"; got != want {
		t.Fatalf("version = %q, want %q", got, want)
	}
	out, err := exec.Command(filepath.Join(r.BinDir, "postgres"), "--version").Output()
	if err != nil {
		t.Fatalf("postgres --version: %v", err)
	}
	if got := string(out); !strings.Contains(got, "15.18") {
		t.Fatalf("postgres --version = %q, want 15.18", got)
	}
	for _, f := range []string{"bin/pgbench", "bin/initdb", "bin/pg_ctl", "bin/pg_config", pgbuild.StampName} {
		if _, err := os.Stat(filepath.Join(r.Prefix, f)); err != nil {
			t.Errorf("installed %s: %v", f, err)
		}
	}
	// Where contrib lands depends on the prefix (PostgreSQL adds
	// /postgresql to lib and share unless the prefix names it), so ask pg_config.
	pgConfig := func(arg string) string {
		out, err := exec.Command(filepath.Join(r.BinDir, "pg_config"), arg).Output()
		if err != nil {
			t.Fatalf("pg_config %s: %v", arg, err)
		}
		return strings.TrimSpace(string(out))
	}
	pkglib, share := pgConfig("--pkglibdir"), pgConfig("--sharedir")
	for _, m := range pgbuild.Contrib {
		for _, f := range []string{filepath.Join(pkglib, m+".so"), filepath.Join(share, "extension", m+".control")} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("contrib %s: %v", m, err)
			}
		}
	}
	if got, want := r.Source.Kind, "tarball"; got != want {
		t.Errorf("source kind = %q, want %q", got, want)
	}
	if len(r.Patches) != 1 || r.Patches[0].Name != "bgwriter-delay.patch" || len(r.Patches[0].SHA256) != 64 {
		t.Errorf("patches = %+v, want one bgwriter-delay.patch with sha256", r.Patches)
	}
	if _, err := os.Stat(r.LogPath); err != nil {
		t.Errorf("build log: %v", err)
	}
	ctx := context.Background()
	parent, dataDir, err := pgctl.ScratchDir(sharedRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(parent)
	c := &pgctl.Cluster{BinDir: r.BinDir, DataDir: dataDir}
	if err := c.InitDB(ctx); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	got, err := c.Show(ctx, "bgwriter_delay")
	if err != nil {
		t.Fatalf("postgres -C bgwriter_delay: %v", err)
	}
	if want := "250"; got != want {
		t.Fatalf("patched bgwriter_delay = %q, want %q", got, want)
	}
	// The stock Debian server still says 200ms, so the value comes from the patch.
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/postgres"); err == nil {
		stock := &pgctl.Cluster{BinDir: "/usr/lib/postgresql/15/bin", DataDir: dataDir}
		if got, err := stock.Show(ctx, "bgwriter_delay"); err != nil || got != "200" {
			t.Errorf("stock bgwriter_delay = %q, %v, want 200", got, err)
		}
	}
}

func TestBuildCached(t *testing.T) {
	first := sharedBuild(t)
	opts := testOpts(t, first.Prefix)
	start := time.Now()
	r, err := pgbuild.Build(context.Background(), opts, nil)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("second build: %v", err)
	}
	t.Logf("cached build: %v", elapsed)
	if !r.Cached {
		t.Fatalf("cached = false, want true")
	}
	if r.BuildKey != first.BuildKey {
		t.Fatalf("key = %s, want %s", r.BuildKey, first.BuildKey)
	}
	if elapsed >= time.Second {
		t.Fatalf("cached build took %v, want under 1s", elapsed)
	}
}

func TestBuildBadPatch(t *testing.T) {
	tb := pgbuildtest.Tarball(t)
	pgbuildtest.RequireTools(t)
	root := scratchRoot(t)
	bad := filepath.Join(root, "bad.patch")
	b, err := os.ReadFile(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	// Context that is not in guc.c makes the hunk fail.
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), "&BgWriterDelay,", "&NoSuchVariable,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(root, "pg")
	// A relative path reaches patch (run in the source tree) made absolute,
	// and the caller's slice keeps what the caller gave.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, bad)
	if err != nil {
		t.Fatal(err)
	}
	patches := []string{rel}
	opts := pgbuild.Options{Tarball: tb, Patches: patches, ConfigureFlags: pgbuildtest.ConfigureFlags, Prefix: prefix}
	_, err = pgbuild.Build(context.Background(), opts, nil)
	if patches[0] != rel {
		t.Errorf("caller's patches[0] = %q after Build, want %q as given", patches[0], rel)
	}
	var pe *pgbuild.PatchError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a pgbuild.PatchError", err)
	}
	msg := err.Error()
	for _, want := range []string{"bad.patch", "FAILED", "NoSuchVariable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if _, err := os.Stat(prefix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("prefix after failed patch: stat err = %v, want not exist", err)
	}
	if _, err := os.Stat(filepath.Join(prefix, pgbuild.StampName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stamp after failed patch: stat err = %v, want not exist", err)
	}
	if _, err := os.Stat(prefix + ".work"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir after failed patch: stat err = %v, want removed", err)
	}
}

// buildProcesses lists the processes working under dir (their cwd or their
// command line names it), as "pid comm".
func buildProcesses(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.HasPrefix(cwd, dir+"/") && !strings.Contains(string(cmdline), dir+"/") {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		name := strings.Join(strings.Fields(string(comm)), "_")
		if err != nil || name == "" {
			continue // exited since its cwd was read
		}
		out = append(out, e.Name()+" "+name)
	}
	return out
}

// A cancelled build stops everything it started: make -j, its sub-makes and
// the compilers they run, not only the make it ran itself.
func TestCancelStopsWholeBuild(t *testing.T) {
	pgbuildtest.RequireTools(t)
	root := scratchRoot(t)
	// Through the shared ccache, as the other test builds: configure reads
	// their results and make starts sooner.
	opts := pgbuildtest.Options(t, filepath.Join(root, "pg"))
	opts.Jobs = 4
	t.Cleanup(func() {
		// Whatever is left must not keep building after the test.
		for _, p := range buildProcesses(root) {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	making := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := pgbuild.Build(ctx, opts, func(phase, line string) {
			if phase == "make" {
				once.Do(func() { close(making) })
			}
		})
		done <- err
	}()
	select {
	case <-making:
	case err := <-done:
		t.Fatalf("build ended before make: %v", err)
	case <-time.After(10 * time.Minute):
		t.Fatalf("make did not start within 10 minutes")
	}
	compiling := func() bool {
		for _, p := range buildProcesses(root) {
			switch strings.Fields(p)[1] {
			case "cc", "gcc", "cc1", "clang":
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(2 * time.Minute); !compiling(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no compiler seen under %s within 2 minutes of make starting", root)
		}
	}
	t.Logf("cancelling with %d processes under the build dir", len(buildProcesses(root)))
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled build: err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Build did not return within 30s of the cancel; still running: %v", buildProcesses(root))
	}
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = buildProcesses(root); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Fatalf("processes of the cancelled build still running 3s after Build returned: %v", left)
}

// A build compiles nothing while a measurement holds the host: it waits,
// says for what, and gives up with its context. Beside shared work (a data
// load, another build) it goes ahead.
func TestBuildWaitsForMeasurement(t *testing.T) {
	tb := pgbuildtest.Tarball(t)
	pgbuildtest.RequireTools(t)
	t.Setenv(hostlock.DirEnv, filepath.Join(t.TempDir(), "lock"))
	root := scratchRoot(t)
	build := func(ctx context.Context, prefix string, onWait func(hostlock.Wait), progress pgbuild.Progress) error {
		_, err := pgbuild.Build(ctx, pgbuild.Options{Tarball: tb, ConfigureFlags: pgbuildtest.ConfigureFlags, Prefix: filepath.Join(root, prefix), HostWait: hostlock.Waiting{Report: onWait}}, progress)
		return err
	}

	measuring, err := hostlock.Acquire(context.Background(), hostlock.Holder{Who: "campaign /c", Doing: "measuring", Mode: hostlock.Exclusive}, hostlock.Waiting{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waits := make(chan hostlock.Wait, 1)
	var mu sync.Mutex
	var phases []string
	done := make(chan error, 1)
	go func() {
		done <- build(ctx, "pg", func(w hostlock.Wait) { waits <- w }, func(phase, _ string) {
			mu.Lock()
			phases = append(phases, phase)
			mu.Unlock()
		})
	}()
	select {
	case w := <-waits:
		if len(w.Holders) != 1 || w.Holders[0].Who != "campaign /c" {
			t.Errorf("build waits for %+v, want campaign /c", w.Holders)
		}
	case err := <-done:
		t.Fatalf("build under a measurement ended without waiting: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("build under a measurement did not report a wait within a minute")
	}
	time.Sleep(1500 * time.Millisecond)
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "held by campaign /c measuring since") {
		t.Errorf("cancelled wait: err = %v, want the holder named and context.Canceled", err)
	}
	mu.Lock()
	if len(phases) != 0 {
		t.Errorf("build phases %q ran under a measurement, want none", phases)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(root, "pg.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("build log under a measurement: stat err = %v, want none made", err)
	}
	measuring.Release()

	// Beside a data load the build starts at once; it is cancelled as soon
	// as it extracts, to keep the test short.
	loading, err := hostlock.Acquire(context.Background(), hostlock.Holder{Who: "campaign /d", Doing: "loading", Mode: hostlock.Shared}, hostlock.Waiting{})
	if err != nil {
		t.Fatal(err)
	}
	defer loading.Release()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	waited := false
	err = build(ctx, "pg2", func(hostlock.Wait) { waited = true }, func(phase, _ string) {
		if phase == "extract" {
			cancel()
		}
	})
	if waited || !errors.Is(err, context.Canceled) {
		t.Errorf("build beside a load: waited %v, err %v; want no wait and the cancel at extract", waited, err)
	}
}
