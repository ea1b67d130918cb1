package bisect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// Commit is one commit of the range, as the report names it.
type Commit struct {
	Hash       string    `json:"hash"`
	Subject    string    `json:"subject"`
	AuthorDate time.Time `json:"author_date"`
	// Ref is what the user called it (--good, --bad); "" for the commits
	// in between.
	Ref string `json:"ref,omitempty"`
}

// Short is the commit's abbreviated hash.
func (c Commit) Short() string {
	if len(c.Hash) > 10 {
		return c.Hash[:10]
	}
	return c.Hash
}

// mirror is a bare mirror of the repository being bisected: the whole
// history of every ref, which a bisect needs (a build's depth-1 fetch of
// one ref is not enough to walk a range).
type mirror struct {
	dir string
}

// mirrorDir is the mirror of url under cache, named by the URL's hash.
func mirrorDir(cache, url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(cache, hex.EncodeToString(sum[:])[:16]+".git")
}

// gitEnv keeps git from asking for credentials on a terminal nobody reads.
var gitEnv = map[string]string{"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

// runGit runs git in dir (a bare repository for the mirror's commands) and
// returns its trimmed stdout.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	res, err := remote.RunLocal(ctx, remote.Command{Args: append([]string{"git"}, args...), Dir: dir, Env: gitEnv}, remote.LocalOptions{})
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// openMirror makes or updates the mirror of url under cache. A mirror that
// exists but cannot be updated (the remote is unreachable) is used as it
// is, with a warning: a resumed bisect needs no new commits.
func openMirror(ctx context.Context, cache, url string, phase func(string, ...any)) (m *mirror, warning string, err error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, "", fmt.Errorf("make %s: %w", cache, err)
	}
	dir := mirrorDir(cache, url)
	lock, err := filelock.LockPath(ctx, dir+".lock", filelock.Exclusive)
	if err != nil {
		return nil, "", err
	}
	defer lock.Close()
	m = &mirror{dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		phase("update the mirror of %s in %s", url, dir)
		if _, err := runGit(ctx, dir, "fetch", "--quiet", "--prune", "origin"); err != nil {
			if ctx.Err() != nil {
				return nil, "", err
			}
			return m, fmt.Sprintf("cannot update the mirror of %s, bisecting with what it has: %v", url, err), nil
		}
		return m, "", nil
	}
	phase("clone %s into %s", url, dir)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, "", fmt.Errorf("remove %s: %w", tmp, err)
	}
	if _, err := runGit(ctx, cache, "clone", "--quiet", "--mirror", "--", url, tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, "", fmt.Errorf("clone %s: %w", url, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, "", fmt.Errorf("move the mirror into %s: %w", dir, err)
	}
	return m, "", nil
}

// resolve is the commit ref names in the mirror; a ref that names no
// commit is a *FieldError on flag.
func (m *mirror) resolve(ctx context.Context, flag, ref string) (string, error) {
	out, err := runGit(ctx, m.dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fieldError(flag, "Unknown Ref", "%q names no commit of the repository (a branch, tag or commit hash is expected)", ref)
	}
	return out, nil
}

// isAncestor reports whether commit a is an ancestor of commit b.
func (m *mirror) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := runGit(ctx, m.dir, "merge-base", "--is-ancestor", a, b)
	var ee *remote.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode == 1:
		return false, nil
	}
	return false, err
}

// logFormat separates a commit's fields with NUL; a subject never holds one.
const logFormat = "--format=%H%x00%s%x00%aI"

// commits are the commits of good..bad on bad's first-parent line, oldest
// first, bad last: the mainline a bisect walks, as git bisect
// --first-parent does.
func (m *mirror) commits(ctx context.Context, good, bad string) ([]Commit, error) {
	out, err := runGit(ctx, m.dir, "log", "--first-parent", "--reverse", logFormat, good+".."+bad)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		c, err := parseCommit(line)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// commit describes one commit.
func (m *mirror) commit(ctx context.Context, hash string) (Commit, error) {
	out, err := runGit(ctx, m.dir, "log", "-1", logFormat, hash)
	if err != nil {
		return Commit{}, err
	}
	return parseCommit(out)
}

func parseCommit(line string) (Commit, error) {
	f := strings.SplitN(line, "\x00", 3)
	if len(f) != 3 {
		return Commit{}, fmt.Errorf("git log line %q: want hash, subject and date", line)
	}
	t, err := time.Parse(time.RFC3339, f[2])
	if err != nil {
		return Commit{}, fmt.Errorf("git log line %q: author date: %w", line, err)
	}
	return Commit{Hash: f[0], Subject: f[1], AuthorDate: t}, nil
}

// resolveRange resolves good and bad in the mirror and lists the commits
// between them. Every way the refs give nothing to bisect is a *FieldError
// found here, before anything is built: a ref that names no commit, good
// not an ancestor of bad, and a range of one commit (bad's parent is good:
// bad is the only suspect, and an A/B campaign of the two answers the
// question).
func (m *mirror) resolveRange(ctx context.Context, goodRef, badRef string) (good, bad Commit, between []Commit, err error) {
	var errs []error
	gh, gerr := m.resolve(ctx, "good", goodRef)
	bh, berr := m.resolve(ctx, "bad", badRef)
	for _, e := range []error{gerr, berr} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return good, bad, nil, errors.Join(errs...)
	}
	if gh == bh {
		return good, bad, nil, fieldError("bad", "Nothing To Bisect", "good (%s) and bad (%s) are the same commit %s", goodRef, badRef, gh)
	}
	ok, err := m.isAncestor(ctx, gh, bh)
	if err != nil {
		return good, bad, nil, err
	}
	if !ok {
		hint := ""
		if back, err := m.isAncestor(ctx, bh, gh); err == nil && back {
			hint = ": it is the other way round, swap good and bad"
		}
		return good, bad, nil, fieldError("good", "Good Is Not An Ancestor Of Bad", "%s (%s) is not an ancestor of bad %s (%s)%s", goodRef, gh[:10], badRef, bh[:10], hint)
	}
	cs, err := m.commits(ctx, gh, bh)
	if err != nil {
		return good, bad, nil, err
	}
	if len(cs) == 0 || cs[len(cs)-1].Hash != bh {
		return good, bad, nil, fmt.Errorf("git log %s..%s did not end with bad", gh, bh)
	}
	if len(cs) == 1 {
		return good, bad, nil, fieldError("bad", "Nothing To Bisect", "the range %s..%s holds one commit, %s %q: it is the only suspect; measure it against its parent with pgbench-runner ab instead",
			goodRef, badRef, cs[0].Hash[:10], cs[0].Subject)
	}
	if good, err = m.commit(ctx, gh); err != nil {
		return good, bad, nil, err
	}
	good.Ref = goodRef
	bad = cs[len(cs)-1]
	bad.Ref = badRef
	return good, bad, cs[:len(cs)-1], nil
}
