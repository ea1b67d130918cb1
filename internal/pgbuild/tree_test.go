package pgbuild_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect/bisecttest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// treeMarkCommits adds to a clone of the bisect tests' repository a commit
// that defines a mark in common/logging.h (included by most client
// programs) and prints it in pgbench --help, then two that change only the
// header's mark. It returns the clone and the three commits.
func treeMarkCommits(t *testing.T) (dir string, commits []string) {
	t.Helper()
	repo := bisecttest.PostgreSQL(t)
	dir = filepath.Join(t.TempDir(), "repo")
	bisecttest.Git(t, filepath.Dir(dir), "clone", "-q", "--shared", repo.Dir, dir)
	const header = "src/include/common/logging.h"
	edit := func(file, old, new string) {
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s does not hold %q", file, old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(header, "#endif							/* COMMON_LOGGING_H */", "#define PG_TREE_TEST_MARK \"tree-mark-1\"\n\n#endif							/* COMMON_LOGGING_H */")
	edit("src/bin/pgbench/pgbench.c", `		   "Report bugs to <%s>.\n"`, `		   "Built with " PG_TREE_TEST_MARK ".\n"`+"\n"+`		   "Report bugs to <%s>.\n"`)
	for i, mark := range []string{"tree-mark-1", "tree-mark-2", "tree-mark-3"} {
		if i > 0 {
			edit(header, "tree-mark-"+string(rune('0'+i)), mark)
		}
		bisecttest.Git(t, dir, "commit", "-q", "-a", "-m", "mark "+mark)
		commits = append(commits, bisecttest.Git(t, dir, "rev-parse", "HEAD"))
	}
	return dir, commits
}

// TestIncrementalBuilds builds commits one after another in the shared
// source tree of the bisect tests, each into a prefix of its own: a header
// change alone reaches the programs that include it (--enable-depend), a
// patch is applied at one build and gone at the next, and each prefix is
// what a fresh build of its key installs (pg_config names it, no file names
// another build's prefix).
func TestIncrementalBuilds(t *testing.T) {
	pgbuildtest.RequireTools(t)
	testhost.RequireCommand(t, "git")
	url, commits := treeMarkCommits(t)
	builds, _ := pgbuildtest.Cache(t)
	root := scratchRoot(t)
	patch, err := filepath.Abs("testdata/pgbench-usage.patch")
	if err != nil {
		t.Fatal(err)
	}
	// The tree the runner's bisect test uses: its objects serve both.
	base := pgbuildtest.Options(t, "")
	base.Tarball, base.GitURL, base.Root = "", url, root
	base.Tree = pgbuild.TreeDir(builds, bisecttest.PostgreSQL(t).Dir, base)

	type want struct {
		commit  string
		patches []string
		help    []string
		notHelp []string
	}
	var prefixes []string
	for i, w := range []want{
		{commits[0], nil, []string{"Built with tree-mark-1."}, nil},
		{commits[1], nil, []string{"Built with tree-mark-2."}, []string{"tree-mark-1"}},
		{commits[1], []string{patch}, []string{"is a patched benchmarking tool", "tree-mark-2"}, nil},
		{commits[2], nil, []string{"Built with tree-mark-3.", "is a benchmarking tool"}, []string{"patched"}},
	} {
		opts := base
		opts.GitRef, opts.Patches = w.commit, w.patches
		before := ccacheStats(t, opts.CCacheDir)
		start := time.Now()
		var reused bool
		r, err := pgbuild.Build(context.Background(), opts, func(phase, line string) {
			reused = reused || (phase == "configure" && strings.HasPrefix(line, "reusing the results of an earlier configure"))
		})
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		// The tree's configure, with the flags of the shared build from
		// the tarball, reads that build's results when it ran first here.
		if !r.Incremental && sharedRoot != "" && !reused {
			t.Errorf("build %d configured the tree afresh after the shared build, without its configure results", i+1)
		}
		t.Logf("build %d (%s, %d patches): %.1fs, incremental %v", i+1, w.commit[:10], len(w.patches), time.Since(start).Seconds(), r.Incremental)
		// The tree's build from the start, in another prefix than the
		// shared build's from the same sources, finds that build's objects
		// without running the preprocessor (ccache's direct mode): the
		// prefix that configure writes into pg_config.h does not make every
		// compile miss. The rest are the sources the tree's commits change,
		// those its own bison and flex generate, and those whose headers
		// were written too recently for direct mode: 1,002 to 1,082 of
		// 1,212 were direct hits here, where a build into a new prefix used
		// to find 1 of 1,207 directly.
		if i == 0 && sharedRoot != "" && !r.Incremental {
			after := ccacheStats(t, opts.CCacheDir)
			direct := after["direct_cache_hit"] - before["direct_cache_hit"]
			compiled := direct + after["preprocessed_cache_hit"] - before["preprocessed_cache_hit"] + after["cache_miss"] - before["cache_miss"]
			t.Logf("build 1: %d compiles, %d direct hits", compiled, direct)
			if compiled < 500 || direct*3 < compiled*2 {
				t.Errorf("build 1: %d of %d compiles were direct hits in ccache, want two thirds and more", direct, compiled)
			}
		}
		if r.Cached || r.Source.Commit != w.commit || (i > 0 && !r.Incremental) {
			t.Errorf("build %d: %+v; want an incremental build of %s", i+1, r, w.commit)
		}
		help := run(t, filepath.Join(r.BinDir, "pgbench"), "--help")
		for _, s := range w.help {
			if !strings.Contains(help, s) {
				t.Errorf("build %d: pgbench --help does not say %q:\n%s", i+1, s, help)
			}
		}
		for _, s := range w.notHelp {
			if strings.Contains(help, s) {
				t.Errorf("build %d: pgbench --help still says %q", i+1, s)
			}
		}
		checkPrefix(t, r, prefixes)
		prefixes = append(prefixes, r.Prefix)
	}
}

// checkPrefix checks that the build in r.Prefix names it, configured as
// its key says, and that none of its files names an other prefix.
func checkPrefix(t *testing.T, r pgbuild.Result, others []string) {
	t.Helper()
	pgConfig := filepath.Join(r.BinDir, "pg_config")
	if got := strings.TrimSpace(run(t, pgConfig, "--bindir")); got != r.BinDir {
		t.Errorf("pg_config --bindir = %s, want %s", got, r.BinDir)
	}
	if got := run(t, pgConfig, "--configure"); !strings.Contains(got, "'--prefix="+r.Prefix+"'") || !strings.Contains(got, "'"+pgbuild.DependFlag+"'") {
		t.Errorf("pg_config --configure = %s, want --prefix=%s and %s", got, r.Prefix, pgbuild.DependFlag)
	}
	filepath.WalkDir(r.Prefix, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, o := range others {
			if bytes.Contains(b, []byte(o)) {
				t.Errorf("%s names the prefix of another build, %s", path, o)
			}
		}
		return nil
	})
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ccacheStats are the counters of the ccache in dir (ccache --print-stats).
func ccacheStats(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := run(t, "ccache", "--print-stats", "-d", dir)
	stats := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, "\t")
		if n, err := strconv.Atoi(value); ok && err == nil {
			stats[name] = n
		}
	}
	return stats
}
