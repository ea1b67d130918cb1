package pgbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
)

// An incremental build (Options.Tree) builds a git source in one source
// tree that stays between builds, as people bisect by hand: it checks out
// the next commit and lets make rebuild what changed. The tree is
// configured with --enable-depend, so make follows header changes, and that
// flag is part of the build key: what an incremental build installs is what
// a fresh build with the same key installs.
//
// Only what make cannot see is handled here:
//   - the prefix, baked into the build by configure, differs per build key.
//     A later build rewrites it in configure's outputs (the only change a
//     re-run of configure with the new prefix makes) and deletes every
//     build product that holds the old prefix, so make rebuilds exactly
//     those (pg_config_paths.h and what includes it, objects holding
//     CONFIGURE_ARGS, binaries with the old run path, .pc files);
//   - a commit that changes configure, its inputs or a makefile (flags make
//     does not track), starts the tree over: a fresh configure and make,
//     through ccache when the build uses it;
//   - patches are taken back by the checkout (git checkout -f, git clean)
//     and applied again;
//   - a build that failed or was cut short leaves no tree state, so the
//     next starts over, and a failed incremental build is tried once more
//     from the start before the commit counts as not building.

// DependFlag is the configure flag every incremental build adds.
const DependFlag = "--enable-depend"

// treeStateName is the tree's record of its last finished build, beside its
// source directory; it is removed while a build runs.
const treeStateName = "state.json"

// treeState is what the tree's sources and objects were last built as.
type treeState struct {
	// Identity covers what the objects depend on besides the sources,
	// which make follows: flags, CFLAGS, compiler and ccache use.
	Identity string `json:"identity"`
	Commit   string `json:"commit"`
	// Patches identifies the patches applied on top (their hashes, in
	// order); PatchedBuildFiles are the build-system files they change.
	Patches           string   `json:"patches"`
	PatchedBuildFiles []string `json:"patched_build_files,omitempty"`
	// Prefix is what configure's outputs and the objects name.
	Prefix string `json:"prefix"`
}

// withDepend is flags with DependFlag, added once.
func withDepend(flags []string) []string {
	if slices.Contains(flags, DependFlag) {
		return slices.Clone(flags)
	}
	return append(slices.Clone(flags), DependFlag)
}

// TreeDir is the source tree of incremental builds of url with opts's
// flags under root: one per repository and build settings, so bisects of
// the same repository with the same settings share it (in turn, under its
// lock), with or without patches.
func TreeDir(root, url string, opts Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q", url, opts.ConfigureFlags, opts.CFlags)
	return filepath.Join(root, "trees", hex.EncodeToString(h.Sum(nil))[:16])
}

// treeSrc is the source directory of the tree.
func (p *plan) treeSrc() string { return filepath.Join(p.opts.Tree, "src") }

// lockTree takes the tree's lock, held for the whole build.
func lockTree(ctx context.Context, tree string) (*filelock.Lock, error) {
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", tree, err)
	}
	return filelock.LockPath(ctx, tree+".lock", filelock.Exclusive)
}

// fetchIntoTree fetches the ref into the tree's repository (made when
// missing) without checking it out, and returns its commit.
func (p *plan) fetchIntoTree(ctx context.Context) (string, error) {
	src := p.treeSrc()
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", fmt.Errorf("make %s: %w", src, err)
	}
	git := gitRunner(ctx, src, p.progress)
	if _, err := os.Stat(filepath.Join(src, ".git")); err != nil {
		if _, err := git("init", "-q"); err != nil {
			return "", err
		}
	}
	if _, err := git("fetch", "-q", "--depth", "1", p.opts.GitURL, p.opts.GitRef); err != nil {
		return "", err
	}
	return git("rev-parse", "FETCH_HEAD^{commit}")
}

// treeIdentity is treeState.Identity for this plan.
func (p *plan) treeIdentity(compiler string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %v", p.opts.ConfigureFlags, p.opts.CFlags, compiler, p.opts.CCacheDir != "")
	return hex.EncodeToString(h.Sum(nil))
}

// patchSet is treeState.Patches for this plan.
func (p *plan) patchSet() string {
	var ids []string
	for _, pt := range p.patches {
		ids = append(ids, pt.SHA256)
	}
	return strings.Join(ids, ",")
}

// patchedBuildFiles are the build-system files (buildSystemFile) the
// patches change, by the file names of their headers (patch -p1).
func patchedBuildFiles(contents [][]byte) []string {
	var files []string
	for _, c := range contents {
		for _, line := range strings.Split(string(c), "\n") {
			if !strings.HasPrefix(line, "+++ ") && !strings.HasPrefix(line, "--- ") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(line[4:]), "\t")
			if _, rel, ok := strings.Cut(name, "/"); ok && buildSystemFile(rel) && !slices.Contains(files, rel) {
				files = append(files, rel)
			}
		}
	}
	return files
}

// readTreeState returns the tree's state, nil when there is none (a new
// tree, or a build that did not finish).
func readTreeState(tree string) *treeState {
	b, err := os.ReadFile(filepath.Join(tree, treeStateName))
	if err != nil {
		return nil
	}
	var st treeState
	if json.Unmarshal(b, &st) != nil || st.Commit == "" || st.Prefix == "" {
		return nil
	}
	return &st
}

// buildTree builds in the tree: incrementally from its last build when it
// can, else from the start; a failed incremental build is tried again from
// the start, so only a fresh failure says the commit does not build.
func (p *plan) buildTree(ctx context.Context) (Result, error) {
	st := readTreeState(p.opts.Tree)
	if err := os.Remove(filepath.Join(p.opts.Tree, treeStateName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("tree state: %w", err)
	}
	incremental := st != nil && st.Identity == p.treeID
	if incremental && st.Patches != p.patchSet() && len(st.PatchedBuildFiles)+len(p.patchedBuild) > 0 {
		p.progress("extract", fmt.Sprintf("starting the tree over: other patches, which change %q", append(st.PatchedBuildFiles, p.patchedBuild...)))
		incremental = false
	}
	if incremental {
		why, err := p.buildSystemChange(ctx, st.Commit)
		if err != nil {
			return Result{}, err
		}
		if why != "" {
			p.progress("extract", "starting the tree over: "+why)
			incremental = false
		}
	}
	if incremental {
		r, err := p.buildTreeOnce(ctx, st)
		var pe *PatchError
		if err == nil || ctx.Err() != nil || errors.As(err, &pe) {
			return r, err
		}
		p.progress("make", fmt.Sprintf("incremental build failed (%v); starting the tree over", firstLine(err.Error())))
	}
	return p.buildTreeOnce(ctx, nil)
}

// buildSystemChange says why the commits from old to the one to build
// change what make does not track (configure, its inputs, makefiles): ""
// when they do not.
func (p *plan) buildSystemChange(ctx context.Context, old string) (string, error) {
	out, err := gitRunner(ctx, p.treeSrc(), p.progress)("diff", "--name-only", old, p.src.Commit)
	if err != nil {
		// The old commit is gone from the tree's repository.
		return "no diff from " + old, nil
	}
	for _, f := range strings.Fields(out) {
		if buildSystemFile(f) {
			return f + " changed", nil
		}
	}
	return "", nil
}

// buildSystemFile says whether a change to path (relative to the top of
// the sources) can change a build in a way make does not follow.
func buildSystemFile(path string) bool {
	base := filepath.Base(path)
	switch {
	case !strings.Contains(path, "/") && (strings.HasPrefix(base, "configure") || base == "aclocal.m4"):
		return true
	case strings.HasPrefix(path, "config/"), strings.HasPrefix(path, "src/template/"), strings.HasPrefix(path, "src/makefiles/"):
		return true
	case strings.HasPrefix(base, "Makefile"), strings.HasPrefix(base, "GNUmakefile"), strings.HasSuffix(base, ".mk"):
		return true
	case strings.HasSuffix(base, ".h.in"):
		// configure's headers: pg_config.h, ecpg_config.h, ...
		return true
	}
	return false
}

// buildTreeOnce builds the commit in the tree: from st, the tree's last
// build, or from the start when st is nil.
func (p *plan) buildTreeOnce(ctx context.Context, st *treeState) (Result, error) {
	// Objects are hashed relative to the tree, so the tree's ccache hits
	// are a fresh build's too.
	b, work, done, err := p.startWork(ctx, p.opts.Tree)
	if err != nil {
		return Result{}, err
	}
	defer done()
	src, stage := p.treeSrc(), filepath.Join(work, "stage")
	clean := []string{"clean", "-fdq"}
	if st == nil {
		clean = []string{"clean", "-ffdxq"}
	}
	for _, args := range [][]string{{"checkout", "-q", "-f", p.src.Commit}, clean} {
		if _, err := b.run("extract", src, nil, "git", args...); err != nil {
			return Result{}, err
		}
	}
	if err := p.applyPatches(b, src); err != nil {
		return Result{}, err
	}
	args := append([]string{"--prefix=" + p.prefix}, p.opts.ConfigureFlags...)
	if st == nil {
		if args, err = p.configure(b, src); err != nil {
			return Result{}, err
		}
	} else if err := p.retarget(src, st.Prefix); err != nil {
		return Result{}, err
	}
	if err := p.compileAndStage(b, src, stage); err != nil {
		return Result{}, err
	}
	r := Result{
		BuildKey: p.key, Prefix: p.prefix, BinDir: filepath.Join(p.prefix, "bin"), ConfigureArgs: args,
		Source: p.src, Patches: p.patches, LogPath: b.logPath, CCache: p.opts.CCacheDir != "", Incremental: st != nil,
	}
	if err := p.install(ctx, &r, filepath.Join(stage, p.prefix)); err != nil {
		return Result{}, err
	}
	state := treeState{Identity: p.treeID, Commit: p.src.Commit, Prefix: p.prefix, Patches: p.patchSet(), PatchedBuildFiles: p.patchedBuild}
	return r, atomicfile.WriteJSON(filepath.Join(p.opts.Tree, treeStateName), state, 0o644)
}

// configureOutputs are the files configure writes that name the prefix.
var configureOutputs = []string{"config.status", "src/include/pg_config.h", "src/Makefile.global"}

// retarget moves a configured and built tree from the prefix old to the
// plan's: configure's outputs get the new prefix (all that configure with
// it writes differently), and every other file of the tree that holds the
// old prefix, a build product, is deleted for make to build again.
// config.status keeps its time (make would run it again for nothing), and
// so does pg_config.h when only config_info.c uses what in it names the
// prefix (CONFIGURE_ARGS): that file's objects hold the old prefix, so
// they are deleted, and nothing else that includes pg_config.h changes.
func (p *plan) retarget(src, old string) error {
	if old == p.prefix {
		return nil
	}
	users, err := configureArgsUsers(src)
	if err != nil {
		return fmt.Errorf("retarget the tree: %w", err)
	}
	keepTime := map[string]bool{"config.status": true, "src/include/pg_config.h": configInfoAlone(users)}
	from, to := []byte(old), []byte(p.prefix)
	skip := map[string]bool{".git": true, "config.log": true}
	for _, o := range configureOutputs {
		path := filepath.Join(src, o)
		skip[o] = true
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("retarget the tree: %w", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, from) {
			return fmt.Errorf("retarget the tree: %s does not name its prefix %s", path, old)
		}
		if err := os.WriteFile(path, bytes.ReplaceAll(b, from, to), fi.Mode()); err != nil {
			return err
		}
		if keepTime[o] {
			if err := os.Chtimes(path, time.Time{}, fi.ModTime()); err != nil {
				return err
			}
		}
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, from) {
			p.progress("configure", "prefix changed: rebuild "+rel)
			return os.Remove(path)
		}
		return nil
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// RemoveTree removes the source tree of incremental builds (a TreeDir),
// unless a build holds it: then it is left to that build and removed is
// false. A directory that is not a tree is refused.
func RemoveTree(tree string) (removed bool, err error) {
	if filepath.Base(filepath.Dir(tree)) != "trees" {
		return false, fmt.Errorf("remove tree %s: not a source tree of incremental builds", tree)
	}
	if _, err := os.Stat(tree); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	lock, err := filelock.TryPath(tree+".lock", filelock.Exclusive)
	if errors.Is(err, filelock.ErrHeld) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("remove tree %s: %w", tree, err)
	}
	defer lock.Close()
	if err := os.RemoveAll(tree); err != nil {
		return false, fmt.Errorf("remove tree %s: %w", tree, err)
	}
	os.Remove(tree + ".lock")
	return true, nil
}
