// Package pgbuildtest gives tests the PostgreSQL source tarball and the
// one cache every test build of it shares, in a directory that outlives a
// test binary: finished builds under their build key (the bisects') and one
// ccache. Every test build uses the same configure flags and CFLAGS, so the
// packages of a test run (pgbuild, the provider, the runner) compile
// PostgreSQL for real once and take the objects from ccache after that. It
// is used by tests only.
package pgbuildtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// TarballEnv names the PostgreSQL source tarball; .ci/run sets it from
// .ci/fetch-postgres-source.sh.
const TarballEnv = "PGBENCH_TEST_PG_TARBALL"

// DefaultTarball is where .ci/fetch-postgres-source.sh leaves the source.
const DefaultTarball = "/var/cache/pgbench-test/src/postgresql-15_15.18.orig.tar.bz2"

// CacheEnv overrides DefaultCache.
const CacheEnv = "PGBENCH_TEST_BUILD_CACHE"

// DefaultCache holds the test builds (builds/, one prefix per build key)
// and their ccache (ccache/). Test binaries run one after another or side
// by side: a build's prefix lock (pgbuild.LockPrefix) makes the second wait
// for the first and then reuse its stamp, and ccache locks its own files.
// .ci/run removes the finished builds and keeps the ccache and the
// repository, as it keeps Go's build cache.
const DefaultCache = "/var/cache/pgbench-test/builds"

// ConfigureFlags are the configure flags of every test build: no
// readline, no ICU, which keeps the build dependencies and time down, and
// the dependency tracking that incremental (bisect) builds configure with:
// it puts -MMD -MP -MF into every compile, which ccache hashes, so builds
// from a tarball and in a bisect's tree share their objects only when
// both have it.
var ConfigureFlags = []string{"--without-readline", "--without-icu", pgbuild.DependFlag}

// ConfigureFlagsHCL is ConfigureFlags as a Terraform list expression.
func ConfigureFlagsHCL() string {
	q := make([]string, len(ConfigureFlags))
	for i, f := range ConfigureFlags {
		q[i] = strconv.Quote(f)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// OptFlags is the optimisation of every test build, as the cflags that
// the provider's and the runner's test builds give with profiling (which
// adds FramePointerFlags to them). At -O0 a cold build from the tarball
// takes 250 s on two cores instead of 365 s at -O2, and what the tests
// measure on test builds (the bisect tests' spin loop in every query)
// slows every query down by more than half at either level.
const OptFlags = "-O0"

// CFlags are the CFLAGS of every test build: a profiling build (frame
// pointers and symbols), as the provider's profiling test needs, so that
// every test build compiles the same objects and ccache serves them all.
var CFlags = pgbuild.WithFramePointers(OptFlags)

// Tools are the programs a build from a tarball runs.
var Tools = []string{"cc", "make", "flex", "bison", "patch", "bzip2"}

// Tarball is the PostgreSQL source tarball; it skips (or fails, see
// testhost.Skip) when it is missing, and under -short.
func Tarball(t testing.TB) string {
	t.Helper()
	testhost.SkipShort(t, "the PostgreSQL source tarball (a build from source)")
	p := os.Getenv(TarballEnv)
	if p == "" {
		p = DefaultTarball
	}
	if _, err := os.Stat(p); err != nil {
		testhost.Skip(t, "PostgreSQL source tarball %s missing (run .ci/fetch-postgres-source.sh, or set %s): %v", p, TarballEnv, err)
	}
	return p
}

// RequireTools skips (or fails) unless every build tool is installed.
func RequireTools(t testing.TB) {
	t.Helper()
	for _, tool := range Tools {
		testhost.RequireCommand(t, tool)
	}
}

// Cache is the shared directory of the test builds and their ccache, made
// reachable by the PostgreSQL user (the servers of a build run as it).
func Cache(t testing.TB) (builds, ccache string) {
	t.Helper()
	return CacheDir(t, "builds"), CacheDir(t, "ccache")
}

// CacheDir is the directory name in the shared cache, for what else the
// test builds share (the bisect tests' repository), made reachable by the
// PostgreSQL user.
func CacheDir(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		dir = DefaultCache
	}
	sub := filepath.Join(dir, name)
	for _, d := range []string{filepath.Dir(dir), dir, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("make %s: %v", d, err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sub
}

// Options are the options of a test build of the tarball with patches
// (absolute paths, applied in order) into prefix, compiled through the
// shared ccache: every phase of the build runs, but the compiler's work is
// done once per cache.
func Options(t testing.TB, prefix string, patches ...string) pgbuild.Options {
	t.Helper()
	testhost.RequireCommand(t, "ccache")
	_, ccache := Cache(t)
	return pgbuild.Options{
		Tarball:        Tarball(t),
		Patches:        append([]string(nil), patches...),
		ConfigureFlags: append([]string(nil), ConfigureFlags...),
		CFlags:         CFlags,
		Prefix:         prefix,
		CCacheDir:      ccache,
	}
}

// CCacheOnPath sends every compile of a build the test starts through a
// program (the provider's runner, for one) through the shared ccache, the
// way a ccache user's PATH does: links named after the compilers, each to
// ccache, go first on PATH. What is built and its build key do not change;
// the test only spares compiling what another test build compiled. As with
// pgbuild's own ccache builds, paths under the temporary directory (where
// test prefixes and their work directories live) are hashed relative and
// the working directory not at all.
func CCacheOnPath(t *testing.T) {
	t.Helper()
	ccache := testhost.RequireCommand(t, "ccache")
	_, dir := Cache(t)
	links := t.TempDir()
	for _, cc := range []string{"cc", "gcc"} {
		if err := os.Symlink(ccache, filepath.Join(links, cc)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", links+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CCACHE_DIR", dir)
	t.Setenv("CCACHE_BASEDIR", os.TempDir())
	t.Setenv("CCACHE_NOHASHDIR", "1")
}
