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
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// A build through ccache also reuses configure's results. configure is one
// shell process that compiles and runs a few hundred test programs: about
// 50 s on two cores, and as long on a metal host, where make is quick. Its
// answers (the *_cv_* cache variables, which config.log lists at the end)
// depend on the configure script, its flags, CFLAGS and the compiler, never
// on the prefix. After a configure that succeeds, they are kept in a site
// file under the ccache directory, named by a hash of those four; the next
// configure with the same four reads them through CONFIG_SITE, an
// environment variable, so that configure's arguments (CONFIGURE_ARGS,
// pg_config --configure) are what they would be without it. The tests
// configure does not cache still run. A configure that fails with a site
// file runs once more without it, so a stale one can cost time but never a
// build.

// configCacheDir is the directory of the site files in a ccache directory;
// ccache keeps its own files in other subdirectories.
const configCacheDir = "pgbench-configure"

// cacheVarRE is a line of config.log's cache variables that a shell reads
// back as it was: a bare word, or one single-quoted string (a quote in it
// written as quote, backslash, quote, quote), on one line. The test
// variables of configure's environment (ac_cv_env_*) are left out: they
// record the environment, not an answer.
var cacheVarRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*_cv_[A-Za-z0-9_]*)=([A-Za-z0-9_./:+,@%=-]*|'([^']|'\\'')*')$`)

// siteFromConfigLog is a site file of the cache variables config.log
// lists, each set unless the environment already sets it (as configure's
// own cache file does), and how many it holds.
func siteFromConfigLog(log []byte) ([]byte, int) {
	var site bytes.Buffer
	site.WriteString("# configure's results, kept by pgbench-runner build for the next configure with the same script, flags and compiler\n")
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
		if !in || m == nil || strings.HasPrefix(m[1], "ac_cv_env_") {
			continue
		}
		fmt.Fprintf(&site, "test \"${%s+set}\" = set || %s=%s\n", m[1], m[1], m[2])
		n++
	}
	return site.Bytes(), n
}

// configSite is the site file of a configure in srcDir with args (the
// prefix left out) and the plan's CFLAGS and compiler, under the ccache
// directory.
func (p *plan) configSite(srcDir string, args []string) (string, error) {
	script, err := os.ReadFile(filepath.Join(srcDir, "configure"))
	if err != nil {
		return "", fmt.Errorf("read configure: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%x\n", sha256.Sum256(script))
	for _, a := range args {
		if !strings.HasPrefix(a, "--prefix=") {
			fmt.Fprintf(h, "%q\n", a)
		}
	}
	fmt.Fprintf(h, "%q\n%q\n", p.opts.CFlags, p.compiler)
	return filepath.Join(p.opts.CCacheDir, configCacheDir, hex.EncodeToString(h.Sum(nil))[:32]+".site"), nil
}

// runConfigure runs ./configure with args in srcDir: through the site file
// of its script, flags and compiler when the build uses ccache and one is
// there, and again without it if that fails. It keeps the results of a
// configure that succeeds for the next.
func (p *plan) runConfigure(b *builder, srcDir string, args, env []string) error {
	if p.opts.CCacheDir == "" {
		_, err := b.run("configure", srcDir, env, "./configure", args...)
		return err
	}
	site, err := p.configSite(srcDir, args)
	if err != nil {
		return err
	}
	if _, err := os.Stat(site); err == nil {
		b.note("configure", "reusing the results of an earlier configure with the same script, flags and compiler: "+site)
		_, err := b.run("configure", srcDir, append(env, "CONFIG_SITE="+site), "./configure", args...)
		if err == nil {
			return keepConfigResults(b, srcDir, site)
		}
		if b.ctx.Err() != nil {
			return err
		}
		b.note("configure", fmt.Sprintf("configure failed with the kept results (%v); removing them and running it afresh", firstLine(err.Error())))
		if err := os.Remove(site); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the kept configure results: %w", err)
		}
	}
	if _, err := b.run("configure", srcDir, env, "./configure", args...); err != nil {
		return err
	}
	return keepConfigResults(b, srcDir, site)
}

// keepConfigResults writes the cache variables of srcDir's config.log into
// site, replacing it whole. A config.log without them keeps nothing.
func keepConfigResults(b *builder, srcDir, site string) error {
	log, err := os.ReadFile(filepath.Join(srcDir, "config.log"))
	if err != nil {
		return fmt.Errorf("read config.log: %w", err)
	}
	data, n := siteFromConfigLog(log)
	if n == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		return fmt.Errorf("make %s: %w", filepath.Dir(site), err)
	}
	if err := atomicfile.WriteFile(site, data, 0o644); err != nil {
		return fmt.Errorf("keep configure's results: %w", err)
	}
	b.note("configure", fmt.Sprintf("kept %d configure results in %s", n, site))
	return nil
}
