package pgbuild

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

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const defaultTarball = "/var/cache/pgbench-test/src/postgresql-15_15.18.orig.tar.bz2"

// testPatch changes the boot value of bgwriter_delay from 200 to 250 ms;
// initdb leaves it commented out, so `postgres -C` shows the boot value.
const testPatch = "testdata/bgwriter-delay.patch"

var testFlags = []string{"--without-readline", "--without-icu"}

func tarball(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PGBENCH_TEST_PG_TARBALL")
	if p == "" {
		p = defaultTarball
	}
	if _, err := os.Stat(p); err != nil {
		testhost.Skip(t, "PostgreSQL source tarball %s missing (run .ci/fetch-postgres-source.sh): %v", p, err)
	}
	return p
}

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

func testOpts(t *testing.T, prefix string) Options {
	abs, err := filepath.Abs(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Tarball:        tarball(t),
		Patches:        []string{abs},
		ConfigureFlags: append([]string(nil), testFlags...),
		Prefix:         prefix,
	}
}

// The one real build of a test run, shared by the tests that need it.
var (
	shared     sync.Once
	sharedRoot string
	sharedRes  Result
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRoot != "" {
		os.RemoveAll(sharedRoot)
	}
	os.Exit(code)
}

func sharedBuild(t *testing.T) Result {
	t.Helper()
	tb := tarball(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch"} {
		testhost.RequireCommand(t, tool)
	}
	shared.Do(func() {
		dir, err := os.MkdirTemp("", "pgbuild-shared-")
		if err != nil {
			sharedErr = err
			return
		}
		os.Chmod(dir, 0o755)
		sharedRoot = dir
		opts := testOpts(t, filepath.Join(dir, "pg"))
		opts.Tarball = tb
		phases := map[string]bool{}
		sharedRes, sharedErr = Build(context.Background(), opts, func(phase, line string) { phases[phase] = true })
		if sharedErr == nil {
			for _, p := range []string{"extract", "patch", "configure", "make", "install"} {
				if !phases[p] {
					sharedErr = fmt.Errorf("no progress for phase %s", p)
				}
			}
		}
		t.Logf("build from tarball: %.1fs", sharedRes.Seconds)
	})
	if sharedErr != nil {
		t.Fatalf("shared build: %v", sharedErr)
	}
	return sharedRes
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
	for _, f := range []string{"bin/pgbench", "bin/initdb", "bin/pg_ctl", "bin/pg_config", StampName} {
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
	for _, m := range Contrib {
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
	r, err := Build(context.Background(), opts, nil)
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

// The build key changes with every input a build depends on, and only then.
func TestKeyChanges(t *testing.T) {
	patch, err := os.ReadFile(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	base := func() keyInputs {
		return keyInputs{"tarball:" + strings.Repeat("a", 64), [][]byte{patch}, append([]string(nil), testFlags...), "", "cc (Debian 12.2.0-14) 12.2.0"}
	}
	baseKey := base().key()
	if again := base().key(); again != baseKey {
		t.Fatalf("same inputs: key %s, want %s", again, baseKey)
	}
	changed := func(name string, change func(*keyInputs)) {
		t.Helper()
		k := base()
		change(&k)
		if got := k.key(); got == baseKey {
			t.Errorf("%s: key unchanged %s", name, got)
		}
	}
	changed("extra configure flag", func(k *keyInputs) { k.flags = append(k.flags, "--with-libnuma") })
	changed("cflags", func(k *keyInputs) { k.cflags = "-O3" })
	changed("one patch byte", func(k *keyInputs) {
		k.patches = [][]byte{[]byte(strings.Replace(string(patch), "250, 10", "251, 10", 1))}
	})
	changed("no patch", func(k *keyInputs) { k.patches = nil })
	changed("other source", func(k *keyInputs) { k.sourceID = "git:" + strings.Repeat("b", 40) })
	changed("other compiler", func(k *keyInputs) { k.compiler = "clang version 16.0.6" })
	// Fields are length-prefixed: moving a boundary is a different key.
	changed("flags split differently", func(k *keyInputs) {
		k.flags = []string{strings.Join(testFlags, "")}
	})
}

func TestBuildBadPatch(t *testing.T) {
	tb := tarball(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch"} {
		testhost.RequireCommand(t, tool)
	}
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
	opts := Options{Tarball: tb, Patches: patches, ConfigureFlags: testFlags, Prefix: prefix}
	_, err = Build(context.Background(), opts, nil)
	if patches[0] != rel {
		t.Errorf("caller's patches[0] = %q after Build, want %q as given", patches[0], rel)
	}
	var pe *PatchError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a PatchError", err)
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
	if _, err := os.Stat(filepath.Join(prefix, StampName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stamp after failed patch: stat err = %v, want not exist", err)
	}
	if _, err := os.Stat(prefix + ".work"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir after failed patch: stat err = %v, want removed", err)
	}
}

// Planning makes the patch and tarball paths absolute in its own options,
// never in the caller's slice.
func TestPlanLeavesCallerPatches(t *testing.T) {
	for _, tool := range requiredTools(Options{}) {
		testhost.RequireCommand(t, tool)
	}
	dir := t.TempDir()
	tb := filepath.Join(dir, "src.tar")
	if err := os.WriteFile(tb, []byte("not built, only hashed"), 0o644); err != nil {
		t.Fatal(err)
	}
	patches := []string{testPatch}
	opts := Options{Tarball: tb, Patches: patches, Prefix: filepath.Join(dir, "pg")}
	p, err := newPlan(context.Background(), opts, func(string, string) {})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	defer p.discard()
	if got, want := patches[0], testPatch; got != want {
		t.Errorf("caller's patches[0] = %q after planning, want %q", got, want)
	}
	want, err := filepath.Abs(testPatch)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.opts.Patches; len(got) != 1 || got[0] != want {
		t.Errorf("planned patches = %q, want [%q]", got, want)
	}
	if len(p.patches) != 1 || p.patches[0].Name != "bgwriter-delay.patch" {
		t.Errorf("patch infos = %+v, want bgwriter-delay.patch", p.patches)
	}
	if got, want := p.src.Kind, "tarball"; got != want {
		t.Errorf("source kind = %q, want %q", got, want)
	}
}

func TestAdoptSystem(t *testing.T) {
	bin := "/usr/lib/postgresql/15/bin"
	testhost.RequireCommand(t, "pg_config", bin)
	r, err := Build(context.Background(), Options{SystemBinDir: bin}, nil)
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if got, want := r.Source.Kind, "system"; got != want {
		t.Errorf("source kind = %q, want %q", got, want)
	}
	if got, want := r.BinDir, bin; got != want {
		t.Errorf("bin_dir = %q, want %q", got, want)
	}
	if !strings.HasPrefix(r.Version, "15.") {
		t.Errorf("version = %q, want 15.x", r.Version)
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		t.Errorf("adopted server gone: %v", err)
	}
	if _, err := Build(context.Background(), Options{SystemBinDir: t.TempDir()}, nil); err == nil {
		t.Errorf("adopt empty dir: err = nil, want an error")
	}
}

func TestMissingTools(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := checkTools(Options{Tarball: "x.tar.bz2"})
	var me *MissingToolsError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want MissingToolsError", err)
	}
	for _, want := range []string{"cc", "make", "flex", "bison", "patch", "bzip2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestLockExcludes(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "pg")
	lock, err := LockPrefix(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := LockPrefix(ctx, prefix); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: err = %v, want deadline exceeded", err)
	}
	if _, err := TryLockPrefix(prefix); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("try while held: err = %v, want filelock.ErrHeld", err)
	}
	lock.Close()
	again, err := TryLockPrefix(prefix)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again.Close()
}

func TestGitFetchRecordsCommit(t *testing.T) {
	testhost.RequireCommand(t, "git")
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "configure"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "configure")
	git(repo, "commit", "-q", "-m", "one")
	want := git(repo, "rev-parse", "HEAD")
	git(repo, "tag", "v1")
	if err := os.WriteFile(filepath.Join(repo, "later"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "later")
	git(repo, "commit", "-q", "-m", "two")

	dir := t.TempDir()
	got, err := gitFetch(context.Background(), dir, "file://"+repo, "v1", func(string, string) {})
	if err != nil {
		t.Fatalf("gitFetch: %v", err)
	}
	if got != want {
		t.Fatalf("commit = %s, want %s (tag v1)", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "later")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file from a later commit present: stat err = %v", err)
	}
	if _, err := gitFetch(context.Background(), t.TempDir(), "file://"+repo, "no-such-ref", func(string, string) {}); err == nil {
		t.Errorf("fetch of a missing ref: err = nil, want an error")
	}
}

// A build started from a make target inherits MAKELEVEL and MAKEFLAGS;
// PostgreSQL's makefiles skip generating headers then, so they must not
// reach the build.
func TestBuildEnvironDropsEnclosingMake(t *testing.T) {
	t.Setenv("MAKELEVEL", "1")
	t.Setenv("MAKEFLAGS", "w -j2")
	t.Setenv("PGBUILD_KEEP_ME", "yes")
	env := strings.Join(buildEnviron(), "\n")
	for _, gone := range []string{"MAKELEVEL=", "MAKEFLAGS="} {
		if strings.Contains(env, gone) {
			t.Errorf("build environment has %s..., want it dropped", gone)
		}
	}
	if !strings.Contains(env, "PGBUILD_KEEP_ME=yes") {
		t.Errorf("build environment lost an ordinary variable")
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
	tb := tarball(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch"} {
		testhost.RequireCommand(t, tool)
	}
	root := scratchRoot(t)
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
		opts := Options{Tarball: tb, ConfigureFlags: testFlags, Prefix: filepath.Join(root, "pg"), Jobs: 4}
		_, err := Build(ctx, opts, func(phase, line string) {
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
	tb := tarball(t)
	for _, tool := range []string{"cc", "make", "flex", "bison", "patch"} {
		testhost.RequireCommand(t, tool)
	}
	t.Setenv(hostlock.DirEnv, filepath.Join(t.TempDir(), "lock"))
	root := scratchRoot(t)
	build := func(ctx context.Context, prefix string, onWait func(hostlock.Wait), progress Progress) error {
		_, err := Build(ctx, Options{Tarball: tb, ConfigureFlags: testFlags, Prefix: filepath.Join(root, prefix), HostWait: hostlock.Waiting{Report: onWait}}, progress)
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

// A bin dir names its build only through the stamp of its prefix: a stamp
// for another bin dir, a broken stamp or none give no key.
func TestStampedBuildKey(t *testing.T) {
	root := t.TempDir()
	stamp := func(prefix, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(prefix, StampName), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(prefix, "bin")
	}
	built := filepath.Join(root, "built")
	good := stamp(built, `{"build_key":"0123abcd","prefix":"`+built+`","bin_dir":"`+built+`/bin"}`)
	moved := stamp(filepath.Join(root, "moved"), `{"build_key":"0123abcd","bin_dir":"/elsewhere/bin"}`)
	broken := stamp(filepath.Join(root, "broken"), `{"build_key":`)
	none := stamp(filepath.Join(root, "none"), "")
	tests := []struct {
		binDir, want string
	}{
		{good, "0123abcd"},
		{good + "/", "0123abcd"},
		{built, ""},
		{moved, ""},
		{broken, ""},
		{none, ""},
		{filepath.Join(root, "missing", "bin"), ""},
	}
	for _, tt := range tests {
		if got := StampedBuildKey(tt.binDir); got != tt.want {
			t.Errorf("StampedBuildKey(%s) = %q, want %q", tt.binDir, got, tt.want)
		}
	}
}
