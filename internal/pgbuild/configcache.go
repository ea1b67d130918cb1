package pgbuild

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// A build through ccache also reuses configure's results. configure is one
// shell process that compiles and runs a few hundred test programs: about
// 50 s on two cores, and as long on a metal host, where make is quick. Its
// answers (the *_cv_* cache variables, which config.log lists at the end)
// depend on the configure script, its flags, CFLAGS, the compiler, the
// environment's compiler variables and the libraries and headers
// installed, never on the prefix. After a configure that ran afresh and
// succeeded, they are kept in a site file under the ccache directory, named
// by a hash of all of those (the installed packages by their database's
// size and time); the next configure with the same hash reads them through
// CONFIG_SITE, an environment variable, so that configure's arguments
// (CONFIGURE_ARGS, pg_config --configure) are what they would be without
// it. The environment's part of the answers (ac_cv_env_*) is kept too, so
// configure itself refuses them if its precious variables differ. The
// tests configure does not cache still run.
//
// Kept results are dropped when they cannot be trusted: a site file with a
// line of another form is not read; a configure that fails with it runs
// once more without it; a build that fails to compile after reading it
// removes it. Keeping or dropping results never fails a build.

// configCacheDir is the directory of the site files in a ccache directory;
// ccache keeps its own files in other subdirectories.
const configCacheDir = "pgbench-configure"

// cacheValue is a value a shell reads back as it was: a bare word, or one
// single-quoted string (a quote in it written as quote, backslash, quote,
// quote), on one line.
const cacheValue = `([A-Za-z0-9_./:+,@%=-]*|'([^']|'\\'')*')`

// cacheVarRE is a line of config.log's cache variables; siteLineRE a line
// of a site file as siteFromConfigLog writes it.
var (
	cacheVarRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*_cv_[A-Za-z0-9_]*)=` + cacheValue + `$`)
	siteLineRE = regexp.MustCompile(`^test "\$\{([A-Za-z_][A-Za-z0-9_]*_cv_[A-Za-z0-9_]*)\+set\}" = set \|\| ([A-Za-z0-9_]+)=` + cacheValue + `$`)
)

// packageDatabases are the package managers' records of what is installed:
// an install or removal changes their size or time, and with them the site
// file, since configure's answers follow the libraries and headers.
var packageDatabases = []string{"/var/lib/dpkg/status", "/var/lib/rpm/rpmdb.sqlite", "/var/lib/rpm/Packages"}

// compilerEnv are the environment variables autoconf reads as the
// compiler's and linker's settings (its precious variables, CFLAGS aside).
var compilerEnv = []string{"CC", "CPP", "CPPFLAGS", "LDFLAGS", "LDFLAGS_EX", "LDFLAGS_SL", "LIBS", "CXX", "CXXFLAGS", "CLANG", "LLVM_CONFIG", "PKG_CONFIG", "PKG_CONFIG_PATH", "PYTHON"}

// siteFromConfigLog is a site file of the cache variables config.log
// lists, each set unless the environment already sets it (as configure's
// own cache file does), and how many it holds. A value that names one of
// the build's own directories (a work directory removed after the build,
// such as that of the ccache links on PATH) is left out.
func siteFromConfigLog(log []byte, own ...string) ([]byte, int) {
	var site bytes.Buffer
	site.WriteString("# configure's results, kept by pgbench-runner build for the next configure with the same script, flags, compiler and packages\n")
	n, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## Cache variables. ##"):
			in = true
			continue
		case in && strings.HasPrefix(line, "## "):
			if n > 0 {
				return site.Bytes(), n
			}
			continue
		}
		m := cacheVarRE.FindStringSubmatch(line)
		if !in || m == nil || slices.ContainsFunc(own, func(dir string) bool { return dir != "" && strings.Contains(m[2], dir) }) {
			continue
		}
		fmt.Fprintf(&site, "test \"${%s+set}\" = set || %s=%s\n", m[1], m[1], m[2])
		n++
	}
	return site.Bytes(), n
}

// validSite reports whether every line of a site file is a comment or a
// line siteFromConfigLog writes: configure runs the file as shell code.
func validSite(data []byte) bool {
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		m := siteLineRE.FindStringSubmatch(line)
		if m == nil || m[1] != m[2] {
			return false
		}
	}
	return true
}

// configSite is the site file of a configure in srcDir with args (the
// prefix left out), the environment env adds, and the plan's CFLAGS and
// compiler, on this host's installed packages, under the ccache directory.
func (p *plan) configSite(srcDir string, args, env []string) (string, error) {
	script, err := os.ReadFile(filepath.Join(srcDir, "configure"))
	if err != nil {
		return "", fmt.Errorf("read configure: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%x\n", sha256.Sum256(script))
	for _, a := range args {
		if !strings.HasPrefix(a, "--prefix=") {
			fmt.Fprintf(h, "arg %q\n", a)
		}
	}
	fmt.Fprintf(h, "cflags %q\ncompiler %q\n", p.opts.CFlags, p.compiler)
	environ := append(buildEnviron(), env...)
	for _, name := range compilerEnv {
		for _, kv := range environ {
			if strings.HasPrefix(kv, name+"=") {
				fmt.Fprintf(h, "env %q\n", kv)
			}
		}
	}
	for _, db := range packageDatabases {
		if fi, err := os.Stat(db); err == nil {
			fmt.Fprintf(h, "packages %s %d %d\n", db, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return filepath.Join(p.opts.CCacheDir, configCacheDir, hex.EncodeToString(h.Sum(nil))[:32]+".site"), nil
}

// runConfigure runs ./configure with args in srcDir: through the site file
// of its script, flags, compiler and packages when the build uses ccache
// and a valid one is there, and again without it if that fails. It keeps
// the results of a configure that ran afresh and succeeded for the next,
// and records in p.siteUsed the site file a configure that succeeded read.
func (p *plan) runConfigure(b *builder, srcDir string, args, env []string) error {
	p.siteUsed = ""
	if p.opts.CCacheDir == "" {
		_, err := b.run("configure", srcDir, env, "./configure", args...)
		return err
	}
	site, err := p.configSite(srcDir, args, env)
	if err != nil {
		return err
	}
	if data, err := os.ReadFile(site); err == nil {
		if !validSite(data) {
			b.note("configure", "not reading "+site+": it holds lines pgbench-runner does not write")
		} else {
			b.note("configure", "reusing the results of an earlier configure with the same script, flags, compiler and packages: "+site)
			_, err := b.run("configure", srcDir, append(slices.Clone(env), "CONFIG_SITE="+site), "./configure", args...)
			if err == nil {
				p.siteUsed = site
				return nil
			}
			if b.ctx.Err() != nil {
				return err
			}
			b.note("configure", fmt.Sprintf("configure failed with the kept results (%v); running it afresh", firstLine(err.Error())))
			forgetSite(b, site)
		}
	}
	if _, err := b.run("configure", srcDir, env, "./configure", args...); err != nil {
		return err
	}
	keepConfigResults(b, srcDir, site)
	return nil
}

// forgetSite removes a site file that configure or the build after it
// failed with; failing to is noted, not an error.
func forgetSite(b *builder, site string) {
	if err := os.Remove(site); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.note("configure", fmt.Sprintf("could not remove the kept configure results: %v", err))
		return
	}
	b.note("configure", "removed the kept configure results "+site)
}

// compileFailed is what a build whose compile failed (not cancelled) does
// about the site file its configure read: it may hold an answer the host
// no longer gives (a library since removed), so the next build configures
// afresh.
func (p *plan) compileFailed(b *builder) {
	if p.siteUsed != "" && b.ctx.Err() == nil {
		forgetSite(b, p.siteUsed)
		p.siteUsed = ""
	}
}

// keepConfigResults writes the cache variables of srcDir's config.log into
// site, replacing it whole, without the values that name srcDir or the
// build's work directory. A config.log without them keeps
// nothing, and failing to keep them is noted, not an error.
func keepConfigResults(b *builder, srcDir, site string) {
	log, err := os.ReadFile(filepath.Join(srcDir, "config.log"))
	if err != nil {
		b.note("configure", fmt.Sprintf("not keeping configure's results: %v", err))
		return
	}
	data, n := siteFromConfigLog(log, srcDir, b.work)
	if n == 0 {
		return
	}
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		b.note("configure", fmt.Sprintf("not keeping configure's results: %v", err))
		return
	}
	if err := atomicfile.WriteFile(site, data, 0o644); err != nil {
		b.note("configure", fmt.Sprintf("not keeping configure's results: %v", err))
		return
	}
	b.note("configure", fmt.Sprintf("kept %d configure results in %s", n, site))
}
