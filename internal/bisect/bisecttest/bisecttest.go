// Package bisecttest gives the bisect tests real git repositories: the
// PostgreSQL 15.18 source tarball (pgbuildtest.Tarball) committed with a
// handful of commits on top, exactly one of which slows down every query,
// and a tiny repository for the range logic. It is used by tests only.
package bisecttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// Commit is one commit of a test repository.
type Commit struct {
	Hash    string
	Subject string
}

// Repo is the PostgreSQL repository of the bisect tests.
type Repo struct {
	Dir string
	// Base is the tarball's commit: good.
	Base Commit
	// Commits are the commits on top of it, oldest first; the last is bad.
	Commits []Commit
	// Slow is the commit that adds the slow-down.
	Slow Commit
}

// Head is the last commit: bad.
func (r *Repo) Head() Commit { return r.Commits[len(r.Commits)-1] }

// edit is one synthetic commit: in file, replace old by new.
type edit struct {
	subject, file, old, new string
}

// SlowSubject is the subject of the commit that slows every query down.
const SlowSubject = "Spin in standard_ExecutorStart before every query"

// edits are the commits on top of the tarball. The fourth spins in the
// executor's per-query path, which select-only runs for every statement;
// the others change comments, a help text and a README, so that each
// commit builds differently and ccache has work to save.
var edits = []edit{
	{"Reword the header comment of nodeSeqscan.c", "src/backend/executor/nodeSeqscan.c",
		"ExecSeqScan				sequentially scans a relation.", "ExecSeqScan				scans a relation sequentially."},
	{"Say why standard_ExecutorStart checks its queryDesc", "src/backend/executor/execMain.c",
		"/* sanity checks: queryDesc must not be started already */", "/* sanity checks: a queryDesc is started once, and only once */"},
	{"pgbench: reword the help of --select-only", "src/bin/pgbench/pgbench.c",
		`perform SELECT-only transactions\n"`, `run SELECT-only transactions\n"`},
	{SlowSubject, "src/backend/executor/execMain.c",
		"	Assert(queryDesc->estate == NULL);\n",
		"	Assert(queryDesc->estate == NULL);\n\n" +
			"	/* Spin a while before every query: a deliberate, fixed slow-down. */\n" +
			"	{\n		volatile uint64 spin = 0;\n\n		for (int i = 0; i < 5000000; i++)\n			spin += i;\n	}\n"},
	{"Add a note on async requests to the executor README", "src/backend/executor/README",
		"callback or ExecAsyncRequestDone to return a result immediately.\n",
		"callback or ExecAsyncRequestDone to return a result immediately.\n\nA node may be asked again before its request is done.\n"},
	{"Fix the comment of int2vectorrecv", "src/backend/utils/adt/int.c",
		"*		int2vectorrecv			- converts external binary format to int2vector",
		"*		int2vectorrecv			- converts the external binary format to int2vector"},
}

// Cache is the shared directory of the test builds and their ccache
// (pgbuildtest.Cache). The commits of Repo have the same hashes on every
// run, so the builds of one test serve the next (the runner's and the
// provider's bisect the same commits): on a fresh machine the first test
// builds, the others reuse.
func Cache(t testing.TB) (builds, ccache string) {
	t.Helper()
	return pgbuildtest.Cache(t)
}

// git runs git in dir with a fixed author, committer and date, so the same
// tree always gives the same commit.
func git(t testing.TB, dir string, when time.Time, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	date := when.UTC().Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=pgbench test", "GIT_AUTHOR_EMAIL=test@pgbench.invalid",
		"GIT_COMMITTER_NAME=pgbench test", "GIT_COMMITTER_EMAIL=test@pgbench.invalid",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Git runs git in dir as git does in the test repositories: a fixed
// author and date, no user or system configuration. It returns the output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return git(t, dir, base.Add(time.Hour), args...)
}

// base is the date of the tarball's commit; each edit comes a minute later.
var base = time.Date(2025, 2, 20, 12, 0, 0, 0, time.UTC)

// PostgreSQL is the repository (the tarball as one commit, then the
// edits), made once per shared cache (pgbuildtest.CacheDir) and kept there:
// its commits have the same hashes on every run, and the tests only read
// it (a bisect fetches from it), so the runner's and the provider's
// bisects use one. Making it takes about ten seconds.
func PostgreSQL(t testing.TB) *Repo {
	t.Helper()
	tb := pgbuildtest.Tarball(t)
	testhost.RequireCommand(t, "git")
	testhost.RequireCommand(t, "tar")
	testhost.RequireCommand(t, "bzip2")
	sum, err := digest.FileSHA256(tb)
	if err != nil {
		t.Fatal(err)
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s %q", sum, edits))
	root := pgbuildtest.CacheDir(t, "repos")
	dir := filepath.Join(root, hex.EncodeToString(key[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		// Made aside and renamed into place whole: a test binary beside
		// this one either finds it finished or makes its own, and the
		// second rename finds the first in place.
		tmp, err := os.MkdirTemp(root, "new-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		made := filepath.Join(tmp, "postgresql")
		makePostgreSQL(t, tb, made)
		if err := os.Rename(made, dir); err != nil {
			if _, serr := os.Stat(filepath.Join(dir, ".git")); serr != nil {
				t.Fatalf("keep the test repository: %v", err)
			}
		}
	}
	return readPostgreSQL(t, dir)
}

// makePostgreSQL makes the repository in dir: the tarball as one commit,
// then the edits.
func makePostgreSQL(t testing.TB, tb, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", tb, "-C", dir, "--strip-components=1", "--no-same-owner").CombinedOutput(); err != nil {
		t.Fatalf("extract %s: %v\n%s", tb, err, out)
	}
	git(t, dir, base, "init", "-q", "-b", "master")
	git(t, dir, base, "add", "-A")
	git(t, dir, base, "commit", "-q", "-m", baseSubject)
	for i, e := range edits {
		when := base.Add(time.Duration(i+1) * time.Minute)
		p := filepath.Join(dir, e.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), e.old) != 1 {
			t.Fatalf("commit %q: %s holds %q %d times, want once", e.subject, e.file, e.old, strings.Count(string(b), e.old))
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.old, e.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, when, "commit", "-q", "-a", "-m", e.subject)
	}
	// Packed, a depth-1 fetch of one commit reuses the pack's deltas.
	git(t, dir, base, "gc", "-q")
}

// readPostgreSQL reads the commits of the repository in dir.
func readPostgreSQL(t testing.TB, dir string) *Repo {
	t.Helper()
	r := &Repo{Dir: dir}
	for i, line := range strings.Split(git(t, dir, base, "log", "--reverse", "--format=%H %s", "master"), "\n") {
		hash, subject, _ := strings.Cut(line, " ")
		c := Commit{Hash: hash, Subject: subject}
		switch {
		case i == 0:
			r.Base = c
		default:
			r.Commits = append(r.Commits, c)
		}
		if subject == SlowSubject {
			r.Slow = c
		}
	}
	if r.Base.Subject != baseSubject || len(r.Commits) != len(edits) || r.Slow.Hash == "" {
		t.Fatalf("test repository %s: base %+v, %d commits, slow %+v; want %q, %d and the slow one", dir, r.Base, len(r.Commits), r.Slow, baseSubject, len(edits))
	}
	return r
}

// baseSubject is the subject of the tarball's commit.
const baseSubject = "PostgreSQL 15.18"

// Small makes a repository of n commits, "commit 1" to "commit n", each
// tagged c1..cn, for the range logic; nothing in it builds.
func Small(t testing.TB, n int) (dir string, commits []Commit) {
	t.Helper()
	testhost.RequireCommand(t, "git")
	dir = t.TempDir()
	git(t, dir, base, "init", "-q", "-b", "main")
	for i := 1; i <= n; i++ {
		when := base.Add(time.Duration(i) * time.Minute)
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, when, "add", "f")
		git(t, dir, when, "commit", "-q", "-m", fmt.Sprintf("commit %d", i))
		git(t, dir, when, "tag", fmt.Sprintf("c%d", i))
		commits = append(commits, Commit{Hash: git(t, dir, when, "rev-parse", "HEAD"), Subject: fmt.Sprintf("commit %d", i)})
	}
	return dir, commits
}
