// Package pgbuild builds PostgreSQL from a release tarball or a git ref, with
// patches applied in order, into a prefix named by a build key, and reuses a
// finished build with the same key. It can also adopt an installed PostgreSQL.
package pgbuild

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pkgmgr"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// DefaultRoot holds the default prefixes, one per build key.
const DefaultRoot = "/opt/pgbench/builds"

// StampName is the file written into a prefix last, after a finished install.
const StampName = ".pgbench-build.json"

// Contrib lists the contrib modules a benchmark needs besides the server.
var Contrib = []string{"pg_prewarm", "pg_buffercache", "pg_stat_statements"}

// Options selects a source, patches and flags for one build.
type Options struct {
	// Tarball is a local path to a release tarball.
	Tarball string
	// SHA256, when set, must match the tarball.
	SHA256 string
	// GitURL and GitRef select a shallow fetch of exactly that ref.
	GitURL string
	GitRef string
	// SystemBinDir adopts an installed PostgreSQL: nothing is built.
	SystemBinDir string
	// Patches are applied in order with patch -p1.
	Patches        []string
	ConfigureFlags []string
	CFlags         string
	// Jobs for make -j; 0 means all CPUs.
	Jobs int
	// Prefix to install into; "" means Root/<key[:16]>.
	Prefix string
	// Root holds the default prefixes; "" means DefaultRoot.
	Root string
	// CCacheDir, when set, compiles through ccache with its cache there, so
	// builds of neighbouring commits (a bisect's) reuse each other's
	// objects. It does not change the build key: ccache gives the objects
	// the compiler would.
	CCacheDir string
	// InstallDeps installs the build dependencies with the host's package
	// manager (see pkgmgr).
	InstallDeps bool
	// HostWait is how the build waits for a measurement on the host to
	// end before it compiles (see hostlock).
	HostWait hostlock.Waiting
	// Tree, with a git source, builds incrementally in this directory,
	// which keeps the sources and objects of its last build (see
	// tree.go): configure gets DependFlag, which the build key covers.
	Tree string
}

// Source is the identity of the sources that were built.
type Source struct {
	Kind   string `json:"kind"`
	URL    string `json:"url,omitempty"`
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// Patch is one applied patch.
type Patch struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Result describes a finished (or reused, or adopted) build.
type Result struct {
	BuildKey      string   `json:"build_key"`
	Prefix        string   `json:"prefix"`
	BinDir        string   `json:"bin_dir"`
	Version       string   `json:"version"`
	ConfigureArgs []string `json:"configure_args"`
	Source        Source   `json:"source"`
	Patches       []Patch  `json:"patches"`
	Seconds       float64  `json:"seconds"`
	Cached        bool     `json:"cached"`
	LogPath       string   `json:"log_path"`
	// CCache says the build compiled through ccache (Options.CCacheDir).
	CCache bool `json:"ccache,omitempty"`
	// Incremental says make rebuilt what changed in a source tree built
	// before (Options.Tree) rather than everything.
	Incremental bool `json:"incremental,omitempty"`
}

// Progress receives each line of build output with its phase
// (extract, patch, configure, make, install).
type Progress func(phase, line string)

// MissingToolsError lists build tools that are not on PATH.
type MissingToolsError struct {
	Tools    []string
	Packages string
}

func (e *MissingToolsError) Error() string {
	return fmt.Sprintf("missing build tools: %s (install them: %s, or run with --install-deps)", strings.Join(e.Tools, ", "), e.Packages)
}

// PatchError is a patch that did not apply.
type PatchError struct {
	Patch  string
	Output string
	Err    error
}

func (e *PatchError) Error() string {
	return fmt.Sprintf("patch %s does not apply: %v\n%s", e.Patch, e.Err, strings.TrimSpace(e.Output))
}

func (e *PatchError) Unwrap() error { return e.Err }

// PhaseError is a build command that failed (configure, make, install):
// the sources did not build. Its text names the phase, the full log and
// the output's last lines.
type PhaseError struct {
	Phase string
	Log   string
	Err   error
	// Tail is the last lines of the command's output.
	Tail string
}

func (e *PhaseError) Error() string {
	return fmt.Sprintf("%s: %v (full log: %s)\n%s", e.Phase, e.Err, e.Log, e.Tail)
}

func (e *PhaseError) Unwrap() error { return e.Err }

// CompilerVersion is the first line of `cc --version`.
func CompilerVersion(ctx context.Context) (string, error) {
	out, err := output(ctx, "cc", "--version")
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(line), nil
}

// output runs a short query command and returns its stdout.
func output(ctx context.Context, args ...string) (string, error) {
	res, err := remote.RunLocal(ctx, remote.Command{Args: args}, remote.LocalOptions{})
	if err != nil {
		return "", err
	}
	return string(res.Stdout), nil
}

// FramePointerFlags are what a build for profiling adds to its CFLAGS:
// debug symbols, and frame pointers so perf can walk the call stacks
// cheaply (perf record --call-graph fp).
const FramePointerFlags = "-g -fno-omit-frame-pointer"

// WithFramePointers is cflags with FramePointerFlags added; with none
// given it starts from -O2, which configure would otherwise choose itself.
func WithFramePointers(cflags string) string {
	if strings.Contains(cflags, "-fno-omit-frame-pointer") {
		return cflags
	}
	if strings.TrimSpace(cflags) == "" {
		cflags = "-O2"
	}
	return strings.TrimSpace(cflags) + " " + FramePointerFlags
}

// keyInputs are everything the build key covers.
type keyInputs struct {
	sourceID string
	patches  [][]byte
	flags    []string
	cflags   string
	compiler string
}

func (k keyInputs) key() string {
	h := sha256.New()
	// Length-prefixed fields so no two different inputs hash alike.
	field := func(b []byte) { fmt.Fprintf(h, "%d:", len(b)); h.Write(b) }
	field([]byte("pgbuild/v1"))
	field([]byte(k.sourceID))
	fmt.Fprintf(h, "patches=%d;", len(k.patches))
	for _, p := range k.patches {
		field(p)
	}
	fmt.Fprintf(h, "flags=%d;", len(k.flags))
	for _, f := range k.flags {
		field([]byte(f))
	}
	field([]byte(k.cflags))
	field([]byte(k.compiler))
	return hex.EncodeToString(h.Sum(nil))
}

func readPatches(paths []string) ([][]byte, []Patch, error) {
	var contents [][]byte
	var infos []Patch
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read patch %s: %w", p, err)
		}
		contents = append(contents, b)
		infos = append(infos, Patch{Name: filepath.Base(p), SHA256: digest.SHA256(b)})
	}
	return contents, infos, nil
}

// requiredTools are checked before anything is built.
func requiredTools(opts Options) []string {
	tools := []string{"cc", "make", "flex", "bison", "patch", "tar"}
	if strings.HasSuffix(opts.Tarball, ".bz2") {
		tools = append(tools, "bzip2")
	}
	if opts.GitURL != "" {
		tools = append(tools, "git")
	}
	return append(tools, opts.tools()...)
}

// tools are the pkgmgr.Tools a build needs beside the build dependencies.
func (o Options) tools() []string {
	if o.CCacheDir != "" {
		return []string{"ccache"}
	}
	return nil
}

// depPackages are the build dependencies per package family.
var depPackages = map[pkgmgr.Family][]string{
	pkgmgr.Deb: {"gcc", "make", "flex", "bison", "patch", "bzip2", "git", "libreadline-dev", "zlib1g-dev", "libnuma-dev", "libicu-dev", "pkg-config"},
	pkgmgr.RPM: {"gcc", "make", "flex", "bison", "patch", "bzip2", "git", "readline-devel", "zlib-devel", "numactl-devel", "libicu-devel", "pkgconf-pkg-config"},
}

func checkTools(opts Options) error {
	var missing []string
	for _, t := range requiredTools(opts) {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	pkgs := "gcc make flex bison patch bzip2 (and the readline, zlib, libnuma, ICU development packages, pkg-config)"
	if opts.CCacheDir != "" {
		pkgs += " and ccache"
	}
	if m, err := pkgmgr.Detect(); err == nil {
		if all, err := pkgmgr.WithTools(m.Family(), depPackages[m.Family()], opts.tools()); err == nil {
			pkgs = m.Name + " install " + strings.Join(all, " ")
		}
	}
	return &MissingToolsError{Tools: missing, Packages: pkgs}
}

// InstallDeps installs the missing build dependencies with the host's
// package manager, and the packages of tools (pkgmgr.Tools names, such as
// ccache), writing its output to log.
func InstallDeps(ctx context.Context, log io.Writer, tools ...string) error {
	m, err := pkgmgr.Detect()
	if err != nil {
		return fmt.Errorf("install build dependencies: %w", err)
	}
	pkgs, err := pkgmgr.WithTools(m.Family(), depPackages[m.Family()], tools)
	if err != nil {
		return fmt.Errorf("install build dependencies: %w", err)
	}
	opts := pkgmgr.Options{NoRecommends: true, Log: func(l string) { fmt.Fprintln(log, l) }}
	if _, err := m.Install(ctx, pkgs, opts); err != nil {
		return fmt.Errorf("install build dependencies: %w", err)
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readStamp returns the result recorded in prefix, or nil when there is none.
func readStamp(prefix string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(prefix, StampName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read build stamp: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse build stamp %s: %w", filepath.Join(prefix, StampName), err)
	}
	return &r, nil
}

// StampedBuildKey returns the build key of the pgbench_postgres_build prefix
// whose bin directory is binDir, read from the prefix's stamp, or "" when
// binDir is not the bin directory of a finished build (an adopted or system
// installation has no stamp). A stamp that cannot be read counts as none:
// the key identifies a build in reports, nothing depends on it.
func StampedBuildKey(binDir string) string {
	binDir = filepath.Clean(binDir)
	if filepath.Base(binDir) != "bin" {
		return ""
	}
	r, err := readStamp(filepath.Dir(binDir))
	if err != nil || r == nil || filepath.Clean(r.BinDir) != binDir {
		return ""
	}
	return r.BuildKey
}

// LockPrefix takes the lock of prefix (the file prefix.lock), which a build
// holds from before it looks into the prefix until its install is done,
// waiting until ctx ends.
func LockPrefix(ctx context.Context, prefix string) (*filelock.Lock, error) {
	return filelock.LockPath(ctx, prefix+".lock", filelock.Exclusive)
}

// TryLockPrefix takes the lock of prefix without waiting: while a build
// holds it, the error wraps filelock.ErrHeld.
func TryLockPrefix(prefix string) (*filelock.Lock, error) {
	return filelock.TryPath(prefix+".lock", filelock.Exclusive)
}

// Version returns the first line of `postgres --version` in binDir.
func Version(ctx context.Context, binDir string) (string, error) {
	out, err := output(ctx, filepath.Join(binDir, "postgres"), "--version")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\S+)`)

// Adopt checks an installed PostgreSQL in binDir and describes it; it never
// builds or removes anything.
func Adopt(ctx context.Context, binDir string) (Result, error) {
	start := time.Now()
	binDir = filepath.Clean(binDir)
	pgv, err := Version(ctx, binDir)
	if err != nil {
		return Result{}, fmt.Errorf("adopt %s: %w", binDir, err)
	}
	m := versionRE.FindStringSubmatch(pgv)
	if m == nil {
		return Result{}, fmt.Errorf("adopt %s: parse postgres --version %q", binDir, pgv)
	}
	cfgOut, err := output(ctx, filepath.Join(binDir, "pg_config"), "--version")
	if err != nil {
		return Result{}, fmt.Errorf("adopt %s: %w", binDir, err)
	}
	cfgV := strings.TrimSpace(cfgOut) // "PostgreSQL 15.18 (Debian ...)"
	if f := strings.Fields(cfgV); len(f) < 2 || f[1] != m[1] {
		return Result{}, fmt.Errorf("adopt %s: pg_config says %q but postgres says %q", binDir, cfgV, pgv)
	}
	var args []string
	if out, err := output(ctx, filepath.Join(binDir, "pg_config"), "--configure"); err == nil {
		args = splitConfigure(strings.TrimSpace(out))
	}
	sum := sha256.Sum256([]byte("system:" + binDir + ":" + pgv + ":" + cfgV))
	return Result{
		BuildKey:      hex.EncodeToString(sum[:]),
		Prefix:        filepath.Dir(binDir),
		BinDir:        binDir,
		Version:       m[1],
		ConfigureArgs: args,
		Source:        Source{Kind: "system", Path: binDir},
		Patches:       []Patch{},
		Seconds:       time.Since(start).Seconds(),
		Cached:        true,
	}, nil
}

// splitConfigure splits pg_config --configure output ('--a' '--b=c d').
func splitConfigure(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Build builds (or reuses, or adopts) PostgreSQL as opts say. progress may be nil.
// It plans the build (tools, patches, sources, build key, prefix), then runs
// it in the prefix, unless a finished build of the same key is there. It
// never changes opts: the caller's Patches stay as given.
func Build(ctx context.Context, opts Options, progress Progress) (Result, error) {
	if progress == nil {
		progress = func(string, string) {}
	}
	start := time.Now()
	if err := opts.checkSource(); err != nil {
		return Result{}, err
	}
	if opts.SystemBinDir != "" {
		return Adopt(ctx, opts.SystemBinDir)
	}
	if opts.Tree != "" {
		opts.ConfigureFlags = withDepend(opts.ConfigureFlags)
		lock, err := lockTree(ctx, opts.Tree)
		if err != nil {
			return Result{}, err
		}
		defer lock.Close()
	}
	p, err := newPlan(ctx, opts, progress)
	if err != nil {
		return Result{}, err
	}
	defer p.discard()
	r, err := p.run(ctx)
	if err != nil {
		return Result{}, err
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// checkSource makes sure the options name exactly one source, and a git
// source a ref.
func (o Options) checkSource() error {
	n := 0
	for _, s := range []string{o.Tarball, o.GitURL, o.SystemBinDir} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("build: give exactly one source: tarball, git or system")
	}
	if o.GitURL != "" && o.GitRef == "" {
		return errors.New("build: git source needs a ref")
	}
	if o.Tree != "" && o.GitURL == "" {
		return errors.New("build: an incremental build (tree) needs a git source")
	}
	return nil
}

// plan is a build decided on: its tools checked, its patches read, its
// sources identified (a git source fetched), its key and prefix known.
type plan struct {
	// opts has an absolute Tarball and Patches, in a slice of its own.
	opts     Options
	progress Progress
	src      Source
	// gitDir is the fetched git tree, moved into the work dir by extract.
	gitDir  string
	patches []Patch
	key     string
	prefix  string
	// treeID is the identity of an incremental build's tree state;
	// patchedBuild the build-system files the patches change.
	treeID       string
	patchedBuild []string
	// compiler is the compiler's version line, in the key.
	compiler string
	// siteUsed is the kept configure results the last configure read
	// (configcache.go), "" when it ran afresh.
	siteUsed string
}

// newPlan plans a build from a tarball or git source.
func newPlan(ctx context.Context, opts Options, progress Progress) (*plan, error) {
	if err := prepareTools(ctx, opts); err != nil {
		return nil, err
	}
	p := &plan{opts: opts, progress: progress}
	contents, err := p.readPatches()
	if err != nil {
		return nil, err
	}
	cc, err := CompilerVersion(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.identifySource(ctx); err != nil {
		p.discard()
		return nil, err
	}
	p.key, p.compiler = keyInputs{p.src.id(), contents, opts.ConfigureFlags, opts.CFlags, cc}.key(), cc
	p.treeID, p.patchedBuild = p.treeIdentity(cc), patchedBuildFiles(contents)
	if p.prefix, err = opts.prefix(p.key); err != nil {
		p.discard()
		return nil, err
	}
	return p, nil
}

// discard removes what planning fetched and the build did not take.
func (p *plan) discard() {
	if p.gitDir != "" {
		os.RemoveAll(p.gitDir)
	}
}

// prepareTools installs the build dependencies when asked to, and checks
// that every tool the build runs is there.
func prepareTools(ctx context.Context, opts Options) error {
	if opts.InstallDeps {
		if err := InstallDeps(ctx, io.Discard, opts.tools()...); err != nil {
			return err
		}
	}
	return checkTools(opts)
}

// readPatches reads the patches the build key covers, and makes the plan's
// patch paths absolute (patch runs in the source tree) in a copy of the
// caller's slice.
func (p *plan) readPatches() ([][]byte, error) {
	contents, infos, err := readPatches(p.opts.Patches)
	if err != nil {
		return nil, err
	}
	p.patches = infos
	if p.patches == nil {
		p.patches = []Patch{}
	}
	abs := make([]string, len(p.opts.Patches))
	for i, path := range p.opts.Patches {
		if abs[i], err = filepath.Abs(path); err != nil {
			return nil, fmt.Errorf("patch %s: %w", path, err)
		}
	}
	p.opts.Patches = abs
	return contents, nil
}

// identifySource checks a tarball against its sha256, or fetches a git ref
// and records its commit.
func (p *plan) identifySource(ctx context.Context) error {
	if p.opts.Tarball != "" {
		abs, err := filepath.Abs(p.opts.Tarball)
		if err != nil {
			return fmt.Errorf("tarball %s: %w", p.opts.Tarball, err)
		}
		p.opts.Tarball = abs
		sum, err := digest.FileSHA256(abs)
		if err != nil {
			return err
		}
		if p.opts.SHA256 != "" && !strings.EqualFold(p.opts.SHA256, sum) {
			return fmt.Errorf("tarball %s: sha256 %s, want %s", abs, sum, p.opts.SHA256)
		}
		p.src = Source{Kind: "tarball", Path: abs, SHA256: sum}
		return nil
	}
	if p.opts.Tree != "" {
		commit, err := p.fetchIntoTree(ctx)
		if err != nil {
			return err
		}
		p.src = Source{Kind: "git", URL: p.opts.GitURL, Commit: commit}
		return nil
	}
	dir, err := os.MkdirTemp("", "pgbuild-git-")
	if err != nil {
		return fmt.Errorf("make git dir: %w", err)
	}
	p.gitDir = dir
	commit, err := gitFetch(ctx, dir, p.opts.GitURL, p.opts.GitRef, p.progress)
	if err != nil {
		return err
	}
	p.src = Source{Kind: "git", URL: p.opts.GitURL, Commit: commit}
	return nil
}

// id is the part of the build key that names the sources.
func (s Source) id() string {
	if s.Kind == "git" {
		return "git:" + s.Commit
	}
	return "tarball:" + s.SHA256
}

// prefix is the absolute prefix a build of key installs into.
func (o Options) prefix(key string) (string, error) {
	prefix := o.Prefix
	if prefix == "" {
		root := o.Root
		if root == "" {
			root = DefaultRoot
		}
		prefix = filepath.Join(root, key[:16])
	}
	abs, err := filepath.Abs(prefix)
	if err != nil {
		return "", fmt.Errorf("prefix %s: %w", o.Prefix, err)
	}
	return abs, nil
}

// run builds into the prefix under its lock, or returns the finished build
// of the same key that is there already.
func (p *plan) run(ctx context.Context) (Result, error) {
	if err := os.MkdirAll(filepath.Dir(p.prefix), 0o755); err != nil {
		return Result{}, fmt.Errorf("make %s: %w", filepath.Dir(p.prefix), err)
	}
	lock, err := LockPrefix(ctx, p.prefix)
	if err != nil {
		return Result{}, err
	}
	defer lock.Close()
	if r, err := p.finished(); err != nil {
		return Result{}, err
	} else if r != nil {
		return *r, nil
	}
	// Compiling on the host would slow a measurement down: wait for any
	// to end, and hold one off until the install is done.
	host, err := hostlock.Acquire(ctx, hostlock.Holder{Who: "build " + p.prefix, Doing: "building", Mode: hostlock.Shared}, p.opts.HostWait)
	if err != nil {
		return Result{}, fmt.Errorf("build %s: %w", p.prefix, err)
	}
	defer host.Release()
	if p.opts.Tree != "" {
		return p.buildTree(ctx)
	}
	return p.build(ctx)
}

// finished returns the build already in the prefix (cached), nil when
// there is none, and an error when the prefix holds something else.
func (p *plan) finished() (*Result, error) {
	r, err := readStamp(p.prefix)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if r.BuildKey != p.key {
			return nil, fmt.Errorf("prefix %s holds another build (key %s, want %s)", p.prefix, r.BuildKey, p.key)
		}
		r.Cached = true
		return r, nil
	}
	if _, err := os.Stat(p.prefix); err == nil {
		return nil, fmt.Errorf("prefix %s exists but holds no finished build stamp; remove it first", p.prefix)
	}
	return nil, nil
}

// build runs the build's steps in a work directory next to the prefix and
// stages the install there; the prefix appears only by the final rename,
// stamp included, so a killed build leaves nothing behind that looks
// finished.
func (p *plan) build(ctx context.Context) (Result, error) {
	b, work, done, err := p.startWork(ctx, "")
	if err != nil {
		return Result{}, err
	}
	defer done()
	logPath := b.logPath
	srcDir, stage := filepath.Join(work, "src"), filepath.Join(work, "stage")
	if err := p.extract(b, srcDir); err != nil {
		return Result{}, err
	}
	if err := p.applyPatches(b, srcDir); err != nil {
		return Result{}, err
	}
	args, err := p.configure(b, srcDir)
	if err != nil {
		return Result{}, err
	}
	if err := p.compileAndStage(b, srcDir, stage); err != nil {
		return Result{}, err
	}
	r := Result{
		BuildKey:      p.key,
		Prefix:        p.prefix,
		BinDir:        filepath.Join(p.prefix, "bin"),
		ConfigureArgs: args,
		Source:        p.src,
		Patches:       p.patches,
		LogPath:       logPath,
		CCache:        p.opts.CCacheDir != "",
	}
	return r, p.install(ctx, &r, filepath.Join(stage, p.prefix))
}

// startWork makes the build's log and its work directory next to the
// prefix (a stale one removed), and a builder that writes to the log, its
// compiles through ccache when asked with the paths under ccacheBase (""
// means the work directory) made relative. done closes the log and
// removes the work directory.
func (p *plan) startWork(ctx context.Context, ccacheBase string) (b *builder, work string, done func(), err error) {
	logPath := p.prefix + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", nil, fmt.Errorf("create build log: %w", err)
	}
	work = p.prefix + ".work"
	done = func() {
		logFile.Close()
		os.RemoveAll(work)
	}
	if err := os.RemoveAll(work); err != nil {
		logFile.Close()
		return nil, "", nil, fmt.Errorf("remove stale %s: %w", work, err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		done()
		return nil, "", nil, fmt.Errorf("make %s: %w", work, err)
	}
	b = &builder{ctx: ctx, log: logFile, progress: p.progress, logPath: logPath, work: work}
	if p.opts.CCacheDir != "" {
		if b.env, err = ccacheEnv(p.opts.CCacheDir, work, cmp.Or(ccacheBase, work)); err != nil {
			done()
			return nil, "", nil, err
		}
	}
	return b, work, done, nil
}

// extract puts the sources into srcDir: the fetched git tree, or the
// tarball's contents.
func (p *plan) extract(b *builder, srcDir string) error {
	if p.gitDir != "" {
		p.progress("extract", "moving git tree "+p.src.Commit)
		if err := os.Rename(p.gitDir, srcDir); err != nil {
			return fmt.Errorf("move git tree: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", srcDir, err)
	}
	_, err := b.run("extract", srcDir, nil, "tar", "-xf", p.opts.Tarball, "--strip-components=1", "--no-same-owner")
	return err
}

// applyPatches applies the patches in order; the first that does not
// apply is a PatchError with patch's output and the rejected hunks.
func (p *plan) applyPatches(b *builder, srcDir string) error {
	for _, patch := range p.opts.Patches {
		out, err := b.run("patch", srcDir, nil, "patch", "-p1", "--forward", "--batch", "-i", patch)
		if err != nil {
			return &PatchError{Patch: patch, Output: out + rejects(srcDir), Err: err}
		}
	}
	return nil
}

// configure runs ./configure for the prefix (reusing an earlier
// configure's results when the build uses ccache: configcache.go) and
// returns its arguments.
func (p *plan) configure(b *builder, srcDir string) ([]string, error) {
	args := append([]string{"--prefix=" + p.prefix}, p.opts.ConfigureFlags...)
	var env []string
	if p.opts.CFlags != "" {
		env = append(env, "CFLAGS="+p.opts.CFlags)
	}
	if err := p.runConfigure(b, srcDir, args, env); err != nil {
		return nil, err
	}
	return args, nil
}

// compileAndStage makes the server and Contrib, and installs them under
// stage (DESTDIR). When that fails, the kept configure results the build
// read go (compileFailed), for fresh builds and tree builds alike.
func (p *plan) compileAndStage(b *builder, srcDir, stage string) (err error) {
	defer func() {
		if err != nil {
			p.compileFailed(b)
		}
	}()
	jobs := p.opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	j := fmt.Sprintf("-j%d", jobs)
	var env []string
	if p.opts.CCacheDir != "" {
		if env, err = p.directModeEnv(b, srcDir); err != nil {
			return err
		}
	}
	if _, err := b.run("make", srcDir, env, "make", j); err != nil {
		return err
	}
	for _, c := range Contrib {
		if _, err := b.run("make", srcDir, env, "make", j, "-C", "contrib/"+c); err != nil {
			return err
		}
	}
	dest := "DESTDIR=" + stage
	if _, err := b.run("install", srcDir, env, "make", "install", dest); err != nil {
		return err
	}
	for _, c := range Contrib {
		if _, err := b.run("install", srcDir, env, "make", "-C", "contrib/"+c, "install", dest); err != nil {
			return err
		}
	}
	return nil
}

// install records the staged build's version in r, writes r as the stamp
// into the staged tree, and moves the tree into the prefix.
func (p *plan) install(ctx context.Context, r *Result, staged string) error {
	pgv, err := Version(ctx, filepath.Join(staged, "bin"))
	if err != nil {
		return err
	}
	m := versionRE.FindStringSubmatch(pgv)
	if m == nil {
		return fmt.Errorf("parse postgres --version %q", pgv)
	}
	r.Version = m[1]
	if err := checkPrefix(staged, p.prefix); err != nil {
		return err
	}
	stamp, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode build stamp: %w", err)
	}
	if err := os.WriteFile(filepath.Join(staged, StampName), append(stamp, '\n'), 0o644); err != nil {
		return fmt.Errorf("write build stamp: %w", err)
	}
	if err := os.Rename(staged, p.prefix); err != nil {
		return fmt.Errorf("move build into %s: %w", p.prefix, err)
	}
	return nil
}

// checkPrefix is nil when every configure argument list in the staged
// install (pg_config and the server print it, the PGXS makefile holds it)
// names prefix: a build whose objects came from a cache must not carry
// another build's configure arguments.
func checkPrefix(staged, prefix string) error {
	mark := []byte("'--prefix=")
	want := append(append([]byte(nil), mark...), prefix+"'"...)
	return filepath.WalkDir(staged, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i := bytes.Index(b, mark); i >= 0; i = nextIndex(b, mark, i) {
			if !bytes.HasPrefix(b[i:], want) {
				other, _, _ := bytes.Cut(b[i+len(mark):], []byte("'"))
				rel, _ := filepath.Rel(staged, path)
				return fmt.Errorf("%s names the prefix %s in its configure arguments, not %s: an object of another build's configure (build again without ccache)", rel, other, prefix)
			}
		}
		return nil
	})
}

// nextIndex is the index of sep in b after the one at i, or -1.
func nextIndex(b, sep []byte, i int) int {
	j := bytes.Index(b[i+1:], sep)
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// rejects returns the content of any .rej files patch left in dir.
func rejects(dir string) string {
	var sb strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".rej") {
			if b, err := os.ReadFile(path); err == nil {
				fmt.Fprintf(&sb, "\n--- rejected hunks in %s:\n%s", strings.TrimPrefix(path, dir+"/"), b)
			}
		}
		return nil
	})
	return sb.String()
}

type builder struct {
	ctx      context.Context
	log      io.Writer
	progress Progress
	logPath  string
	// work is the build's work directory, removed after it.
	work string
	// env is added to every command's environment (ccache's).
	env []string
}

// buildEnviron is this process's environment without the variables an
// enclosing make exports (MAKEFLAGS, MAKELEVEL, ...). PostgreSQL's makefiles
// generate headers such as utils/errcodes.h only when MAKELEVEL is 0, so a
// build started from a make target (make test, a CI job) would otherwise
// fail with "utils/errcodes.h: No such file or directory".
func buildEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "GNUMAKEFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// note tells the log and progress what the build does besides running a
// command.
func (b *builder) note(phase, msg string) {
	fmt.Fprintf(b.log, "==> [%s] %s\n", phase, msg)
	b.progress(phase, msg)
}

// quiet runs one command in dir with the build's environment, its output
// neither logged nor shown: for questions the build asks (make -n).
func (b *builder) quiet(dir, name string, args ...string) (string, error) {
	c := remote.Command{Args: append([]string{name}, args...), Dir: dir}
	environ := append(append(buildEnviron(), "LC_ALL=C"), b.env...)
	res, err := remote.RunLocal(b.ctx, c, remote.LocalOptions{Environ: environ})
	if err != nil {
		return "", err
	}
	return string(res.Stdout), nil
}

// run runs one build command in dir, streaming its output to the log and
// progress, and returns its output, stdout and stderr interleaved as they
// arrived. A cancel stops the command's whole process group: make -j, its
// sub-makes and their compilers.
func (b *builder) run(phase, dir string, env []string, name string, args ...string) (string, error) {
	cmdline := name + " " + strings.Join(args, " ")
	fmt.Fprintf(b.log, "==> [%s] %s\n", phase, cmdline)
	b.progress(phase, "$ "+cmdline)
	var mu sync.Mutex
	var out strings.Builder
	line := func(l string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(b.log, l)
		out.WriteString(l + "\n")
		b.progress(phase, l)
	}
	c := remote.Command{Args: append([]string{name}, args...), Dir: dir, OnStdout: line, OnStderr: line}
	environ := append(append(append(buildEnviron(), "LC_ALL=C"), b.env...), env...)
	_, err := remote.RunLocal(b.ctx, c, remote.LocalOptions{Environ: environ})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) {
			// The output tail below already holds stderr, in order.
			ee.Stderr = ""
		}
		return out.String(), &PhaseError{Phase: phase, Log: b.logPath, Err: err, Tail: tail(out.String(), 30)}
	}
	return out.String(), nil
}

// gitRunner runs git in dir and returns its trimmed stdout.
func gitRunner(ctx context.Context, dir string, progress Progress) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		progress("extract", "$ git "+strings.Join(args, " "))
		res, err := remote.RunLocal(ctx, remote.Command{Args: append([]string{"git"}, args...), Dir: dir}, remote.LocalOptions{})
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(res.Stdout)), nil
	}
}

// gitFetch fetches exactly ref from url into dir and returns the commit.
func gitFetch(ctx context.Context, dir, url, ref string, progress Progress) (string, error) {
	git := gitRunner(ctx, dir, progress)
	if _, err := git("init", "-q"); err != nil {
		return "", err
	}
	if _, err := git("fetch", "-q", "--depth", "1", url, ref); err != nil {
		return "", err
	}
	if _, err := git("checkout", "-q", "FETCH_HEAD"); err != nil {
		return "", err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("chmod %s: %w", dir, err)
	}
	return commit, nil
}
