package pgbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeConfigure is a configure script in miniature: it reads CONFIG_SITE
// as autoconf's does, computes ac_cv_answer from $ANSWER unless a cached
// value is set, fails on the answer "broken", and lists its cache
// variables in config.log as autoconf does (one multi-line value among
// them, which a site file cannot hold on one line).
const fakeConfigure = `#!/bin/sh
echo "site=${CONFIG_SITE:-none}" >> record
if test -n "$CONFIG_SITE"; then . "$CONFIG_SITE"; fi
test "${ac_cv_answer+set}" = set || ac_cv_answer=$ANSWER
if test "$ac_cv_answer" = broken; then echo "configure: error: the cached answer is broken" >&2; exit 1; fi
pgac_cv_quoted=${pgac_cv_quoted-"a b'c $ANSWER"}
quoted=$(printf '%s' "$pgac_cv_quoted" | sed "s/'/'\\\\''/g")
cat > config.log <<LOG
This file contains any messages produced by compilers while
running configure.

## ---------------- ##
## Cache variables. ##
## ---------------- ##

ac_cv_answer=$ac_cv_answer
ac_cv_env_CFLAGS_set=set
ac_cv_multi='line one
line two'
ac_cv_path_CLANG=$WORK/ccache-bin/clang
pgac_cv_quoted='$quoted'
pgac_cv_srcdir=$PWD/src

## ----------------- ##
## Output variables. ##
## ----------------- ##

CC='gcc'
late_cv_outside='not a cache variable'
LOG
echo "answer=$ac_cv_answer quoted=$pgac_cv_quoted" > answers
`

// configureDir is a source directory holding fakeConfigure.
func configureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "configure"), []byte(fakeConfigure), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// configurePlan is a plan whose builds go through ccache in cacheDir (or
// not, with ""), with a work directory of its own, and the progress lines
// it reports. The host's package database is a file of the test's.
func configurePlan(t *testing.T, cacheDir string) (*plan, *builder, *[]string) {
	t.Helper()
	var lines []string
	progress := func(phase, line string) { lines = append(lines, phase+": "+line) }
	work := t.TempDir()
	log, err := os.Create(filepath.Join(work, "build.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	p := &plan{opts: Options{CCacheDir: cacheDir, CFlags: "-O2"}, progress: progress, compiler: "gcc (Debian 12.2.0-14) 12.2.0"}
	return p, &builder{ctx: context.Background(), log: log, progress: progress, logPath: log.Name(), work: work}, &lines
}

// fakePackages points packageDatabases at a file of the test's, which it
// returns.
func fakePackages(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(db, []byte("Package: gcc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := packageDatabases
	packageDatabases = []string{db}
	t.Cleanup(func() { packageDatabases = saved })
	return db
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// configureEnv is the environment of a fake configure's run: its answer,
// and the work directory it names in one value.
func configureEnv(b *builder, answer string) []string {
	return []string{"ANSWER=" + answer, "WORK=" + b.work}
}

// TestConfigureReusesItsResults: the second configure of the same script
// and flags reads the first one's answers and keeps nothing new; other
// flags, CFLAGS, a compiler, compiler variables, the installed packages or
// another script get site files of their own; a build without ccache keeps
// none.
func TestConfigureReusesItsResults(t *testing.T) {
	db := fakePackages(t)
	cache := t.TempDir()
	args := []string{"--prefix=/opt/a", "--without-icu"}
	first, second := configureDir(t), configureDir(t)
	p, b, _ := configurePlan(t, cache)
	if err := p.runConfigure(b, first, args, configureEnv(b, "first")); err != nil {
		t.Fatalf("first configure: %v", err)
	}
	if p.siteUsed != "" {
		t.Errorf("the first configure read %s", p.siteUsed)
	}
	site, err := p.configSite(first, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := readFile(t, site)
	for _, want := range []string{`test "${ac_cv_answer+set}" = set || ac_cv_answer=first`, `pgac_cv_quoted='a b'\''c first'`, `ac_cv_env_CFLAGS_set=set`} {
		if !strings.Contains(kept, want+"\n") {
			t.Errorf("site file lacks %q:\n%s", want, kept)
		}
	}
	// Not one line a shell reads otherwise than written, nor a value that
	// names the build's own directories.
	for _, unwanted := range []string{"ac_cv_multi", "line two", "CC=", "late_cv_outside", "ac_cv_path_CLANG", "pgac_cv_srcdir"} {
		if strings.Contains(kept, unwanted) {
			t.Errorf("site file holds %q:\n%s", unwanted, kept)
		}
	}

	// Another prefix is the same configure: it reads the first's answers.
	p, b, lines := configurePlan(t, cache)
	if err := p.runConfigure(b, second, []string{"--prefix=/opt/b", "--without-icu"}, configureEnv(b, "second")); err != nil {
		t.Fatalf("second configure: %v", err)
	}
	if got, want := readFile(t, filepath.Join(second, "record")), "site="+site+"\n"; got != want {
		t.Errorf("second configure's CONFIG_SITE: %q, want %q", got, want)
	}
	if got, want := readFile(t, filepath.Join(second, "answers")), "answer=first quoted=a b'c first\n"; got != want {
		t.Errorf("second configure's answers: %q, want %q (the first's)", got, want)
	}
	progress := strings.Join(*lines, "\n")
	if !strings.Contains(progress, "reusing the results of an earlier configure") || strings.Contains(progress, "kept ") || p.siteUsed != site {
		t.Errorf("the second configure: site used %q; want it to say it reused %s and keep nothing new:\n%s", p.siteUsed, site, progress)
	}

	// What changes configure's answers changes the site file.
	others := map[string]func(p *plan) ([]string, []string){
		"flags":    func(p *plan) ([]string, []string) { return []string{"--prefix=/opt/a", "--with-icu"}, nil },
		"CFLAGS":   func(p *plan) ([]string, []string) { p.opts.CFlags = "-O0"; return args, nil },
		"compiler": func(p *plan) ([]string, []string) { p.compiler = "clang version 14"; return args, nil },
		"CC":       func(p *plan) ([]string, []string) { return args, []string{"CC=clang"} },
		"packages": func(p *plan) ([]string, []string) {
			if err := os.WriteFile(db, []byte("Package: gcc\nPackage: libreadline-dev\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return args, nil
		},
	}
	for _, name := range []string{"flags", "CFLAGS", "compiler", "CC", "packages"} {
		p, _, _ := configurePlan(t, cache)
		a, env := others[name](p)
		other, err := p.configSite(first, a, env)
		if err != nil {
			t.Fatal(err)
		}
		if other == site {
			t.Errorf("another %s, the same site file %s", name, site)
		}
	}
	script := configureDir(t)
	if err := os.WriteFile(filepath.Join(script, "configure"), []byte(fakeConfigure+"# another version\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if other, err := p.configSite(script, args, nil); err != nil || other == site {
		t.Errorf("another configure script: site %s (%v), want other than %s", other, err, site)
	}

	// Without ccache nothing is kept or read.
	plain := configureDir(t)
	p, b, _ = configurePlan(t, "")
	if err := p.runConfigure(b, plain, args, configureEnv(b, "plain")); err != nil {
		t.Fatalf("configure without ccache: %v", err)
	}
	if got := readFile(t, filepath.Join(plain, "record")); got != "site=none\n" {
		t.Errorf("configure without ccache read %q", got)
	}
}

// TestConfigureDropsBrokenResults: a kept answer that makes configure
// fail costs one more configure, never the build, and is replaced; a site
// file with a line of another form is not read; a build that fails to
// compile after reading kept results removes them, unless it was
// cancelled.
func TestConfigureDropsBrokenResults(t *testing.T) {
	fakePackages(t)
	cache := t.TempDir()
	args := []string{"--prefix=/opt/a"}
	p, b, lines := configurePlan(t, cache)
	src := configureDir(t)
	site, err := p.configSite(src, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(site, []byte("test \"${ac_cv_answer+set}\" = set || ac_cv_answer=broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.runConfigure(b, src, args, configureEnv(b, "fresh")); err != nil {
		t.Fatalf("configure with a broken site file: %v", err)
	}
	if got, want := readFile(t, filepath.Join(src, "record")), "site="+site+"\nsite=none\n"; got != want {
		t.Errorf("configure runs: %q, want %q (with the site file, then without)", got, want)
	}
	if got := readFile(t, filepath.Join(src, "answers")); got != "answer=fresh quoted=a b'c fresh\n" {
		t.Errorf("answers after the retry: %q", got)
	}
	if kept := readFile(t, site); !strings.Contains(kept, "ac_cv_answer=fresh\n") || strings.Contains(kept, "broken") {
		t.Errorf("site file after the retry:\n%s", kept)
	}
	if !strings.Contains(strings.Join(*lines, "\n"), "running it afresh") || p.siteUsed != "" {
		t.Errorf("site used %q; want progress to say configure ran afresh:\n%s", p.siteUsed, strings.Join(*lines, "\n"))
	}

	// A line siteFromConfigLog does not write: the file is not run.
	if err := os.WriteFile(site, []byte("test \"${ac_cv_answer+set}\" = set || ac_cv_answer=first\ntouch pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src = configureDir(t)
	p, b, lines = configurePlan(t, cache)
	if err := p.runConfigure(b, src, args, configureEnv(b, "fresh")); err != nil {
		t.Fatalf("configure with a foreign site file: %v", err)
	}
	if got := readFile(t, filepath.Join(src, "record")); got != "site=none\n" || !strings.Contains(strings.Join(*lines, "\n"), "not reading") {
		t.Errorf("configure runs with a foreign site file: %q, want one without it, and a note:\n%s", got, strings.Join(*lines, "\n"))
	}
	if _, err := os.Stat(filepath.Join(src, "pwned")); err == nil {
		t.Errorf("the foreign site file ran")
	}

	// The results read, then the compile fails: they go, unless the build
	// was cancelled.
	src = configureDir(t)
	p, b, _ = configurePlan(t, cache)
	if err := p.runConfigure(b, src, args, configureEnv(b, "again")); err != nil || p.siteUsed != site {
		t.Fatalf("configure: %v, site used %q; want %s", err, p.siteUsed, site)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.ctx = ctx
	p.compileFailed(b)
	if _, err := os.Stat(site); err != nil {
		t.Errorf("a cancelled build removed the kept results: %v", err)
	}
	b.ctx = context.Background()
	p.compileFailed(b)
	if _, err := os.Stat(site); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kept results after a failed compile: stat = %v, want gone", err)
	}
}

// TestKeepingResultsNeverFailsABuild: an unwritable cache directory costs
// the kept results, not the configure that succeeded.
func TestKeepingResultsNeverFailsABuild(t *testing.T) {
	fakePackages(t)
	cache := t.TempDir()
	// A file where the directory of the site files would go.
	if err := os.WriteFile(filepath.Join(cache, configCacheDir), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, b, lines := configurePlan(t, cache)
	if err := p.runConfigure(b, configureDir(t), []string{"--prefix=/opt/a"}, configureEnv(b, "first")); err != nil {
		t.Fatalf("configure: %v", err)
	}
	if !strings.Contains(strings.Join(*lines, "\n"), "not keeping configure's results") {
		t.Errorf("progress does not say the results were not kept:\n%s", strings.Join(*lines, "\n"))
	}
}

// TestSiteFromConfigLogReadsOnlyTheCacheSection: variables before the
// cache section or after it are not configure's answers.
func TestSiteFromConfigLogReadsOnlyTheCacheSection(t *testing.T) {
	log := "ac_cv_before=1\n## ---------------- ##\n## Cache variables. ##\n## ---------------- ##\n\nac_cv_in=2\n\n## ----------------- ##\n## Output variables. ##\n## ----------------- ##\n\nac_cv_after=3\n"
	site, n := siteFromConfigLog([]byte(log))
	if n != 1 || !strings.Contains(string(site), "ac_cv_in=2") || strings.Contains(string(site), "before") || strings.Contains(string(site), "after") {
		t.Errorf("site of %d variables:\n%s", n, site)
	}
	if _, n := siteFromConfigLog([]byte("no cache section\n")); n != 0 {
		t.Errorf("a log without the section gave %d variables", n)
	}
}
