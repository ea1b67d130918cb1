package pgbuild

import (
	"context"
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
pgac_cv_quoted=${pgac_cv_quoted-"a b'c"}
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
pgac_cv_quoted='a b'\''c'

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
// not, with ""), with the progress lines it reports.
func configurePlan(t *testing.T, cacheDir string) (*plan, *builder, *[]string) {
	t.Helper()
	var lines []string
	progress := func(phase, line string) { lines = append(lines, phase+": "+line) }
	log, err := os.Create(filepath.Join(t.TempDir(), "build.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	p := &plan{opts: Options{CCacheDir: cacheDir, CFlags: "-O2"}, progress: progress, compiler: "gcc (Debian 12.2.0-14) 12.2.0"}
	return p, &builder{ctx: context.Background(), log: log, progress: progress, logPath: log.Name()}, &lines
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfigureReusesItsResults: the second configure of the same script
// and flags reads the first one's answers; other flags, CFLAGS or a
// compiler get site files of their own; a build without ccache keeps none.
func TestConfigureReusesItsResults(t *testing.T) {
	cache := t.TempDir()
	args := []string{"--prefix=/opt/a", "--without-icu"}
	first, second := configureDir(t), configureDir(t)
	p, b, _ := configurePlan(t, cache)
	if err := p.runConfigure(b, first, args, []string{"ANSWER=first"}); err != nil {
		t.Fatalf("first configure: %v", err)
	}
	site, err := p.configSite(first, args)
	if err != nil {
		t.Fatal(err)
	}
	kept := readFile(t, site)
	for _, want := range []string{`test "${ac_cv_answer+set}" = set || ac_cv_answer=first`, `pgac_cv_quoted='a b'\''c'`} {
		if !strings.Contains(kept, want+"\n") {
			t.Errorf("site file lacks %q:\n%s", want, kept)
		}
	}
	for _, unwanted := range []string{"ac_cv_env_", "ac_cv_multi", "line two", "CC=", "late_cv_outside"} {
		if strings.Contains(kept, unwanted) {
			t.Errorf("site file holds %q:\n%s", unwanted, kept)
		}
	}

	// Another prefix is the same configure: it reads the first's answers.
	p, b, lines := configurePlan(t, cache)
	if err := p.runConfigure(b, second, []string{"--prefix=/opt/b", "--without-icu"}, []string{"ANSWER=second"}); err != nil {
		t.Fatalf("second configure: %v", err)
	}
	if got, want := readFile(t, filepath.Join(second, "record")), "site="+site+"\n"; got != want {
		t.Errorf("second configure's CONFIG_SITE: %q, want %q", got, want)
	}
	if got, want := readFile(t, filepath.Join(second, "answers")), "answer=first quoted=a b'c\n"; got != want {
		t.Errorf("second configure's answers: %q, want %q (the first's)", got, want)
	}
	if !strings.Contains(strings.Join(*lines, "\n"), "reusing the results of an earlier configure") {
		t.Errorf("progress does not say the results were reused:\n%s", strings.Join(*lines, "\n"))
	}

	// What changes configure's answers changes the site file.
	others := map[string]func(p *plan) []string{
		"flags":    func(p *plan) []string { return []string{"--prefix=/opt/a", "--with-icu"} },
		"CFLAGS":   func(p *plan) []string { p.opts.CFlags = "-O0"; return args },
		"compiler": func(p *plan) []string { p.compiler = "clang version 14"; return args },
	}
	for name, change := range others {
		p, _, _ := configurePlan(t, cache)
		other, err := p.configSite(first, change(p))
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
	if other, err := p.configSite(script, args); err != nil || other == site {
		t.Errorf("another configure script: site %s (%v), want other than %s", other, err, site)
	}

	// Without ccache nothing is kept or read.
	plain := configureDir(t)
	p, b, _ = configurePlan(t, "")
	if err := p.runConfigure(b, plain, args, []string{"ANSWER=plain"}); err != nil {
		t.Fatalf("configure without ccache: %v", err)
	}
	if got := readFile(t, filepath.Join(plain, "record")); got != "site=none\n" {
		t.Errorf("configure without ccache read %q", got)
	}
}

// TestConfigureDropsBrokenResults: a kept answer that makes configure
// fail costs one more configure, never the build, and is replaced.
func TestConfigureDropsBrokenResults(t *testing.T) {
	cache := t.TempDir()
	args := []string{"--prefix=/opt/a"}
	src := configureDir(t)
	p, b, lines := configurePlan(t, cache)
	site, err := p.configSite(src, args)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(site, []byte("ac_cv_answer=broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.runConfigure(b, src, args, []string{"ANSWER=fresh"}); err != nil {
		t.Fatalf("configure with a broken site file: %v", err)
	}
	if got, want := readFile(t, filepath.Join(src, "record")), "site="+site+"\nsite=none\n"; got != want {
		t.Errorf("configure runs: %q, want %q (with the site file, then without)", got, want)
	}
	if got := readFile(t, filepath.Join(src, "answers")); got != "answer=fresh quoted=a b'c\n" {
		t.Errorf("answers after the retry: %q", got)
	}
	if kept := readFile(t, site); !strings.Contains(kept, "ac_cv_answer=fresh\n") || strings.Contains(kept, "broken") {
		t.Errorf("site file after the retry:\n%s", kept)
	}
	if !strings.Contains(strings.Join(*lines, "\n"), "running it afresh") {
		t.Errorf("progress does not say configure ran afresh:\n%s", strings.Join(*lines, "\n"))
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
