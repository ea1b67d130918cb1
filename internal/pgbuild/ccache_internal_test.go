package pgbuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (path: content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The sources that name CONFIGURE_ARGS decide whether a build may use
// ccache's direct mode: C, headers, and the grammar and scanner sources
// that generate C, but not pg_config.h (which defines it), configure's
// own files, git's objects or a dangling link.
func TestConfigureArgsUsers(t *testing.T) {
	dir := writeTree(t, map[string]string{
		configInfo:                   `configdata[i].setting = pstrdup(CONFIGURE_ARGS);`,
		"src/include/pg_config.h":    `#define CONFIGURE_ARGS " '--prefix=/x'"`,
		"src/include/pg_config.h.in": `#undef CONFIGURE_ARGS`,
		"configure":                  `CONFIGURE_ARGS`,
		".git/objects/x.c":           `CONFIGURE_ARGS`,
		"src/backend/parser/gram.y":  `/* prints CONFIGURE_ARGS */`,
		"src/bin/x/x.c":              `MY_CONFIGURE_ARGS_LIKE`,
	})
	if err := os.Symlink("missing.c", filepath.Join(dir, "src/bin/x/dangling.c")); err != nil {
		t.Fatal(err)
	}
	users, err := configureArgsUsers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"src/backend/parser/gram.y", configInfo}; !slices.Equal(users, want) {
		t.Errorf("users = %v, want %v", users, want)
	}
}

// An install whose configure arguments name another prefix anywhere is
// refused, naming the file and the other prefix; one that names only its
// own is not.
func TestCheckPrefix(t *testing.T) {
	own := map[string]string{
		"bin/pg_config":                "\x00 '--prefix=/opt/pg/a' '--enable-depend'\x00",
		"lib/pgxs/src/Makefile.global": "configure_args =  '--prefix=/opt/pg/a' '--without-icu'\n",
		"include/server/pg_config.h":   `#define CONFIGURE_ARGS " '--prefix=/opt/pg/a'"`,
		"share/postgresql.conf.sample": "# no arguments here\n",
	}
	if err := checkPrefix(writeTree(t, own), "/opt/pg/a"); err != nil {
		t.Errorf("an install of its own prefix: %v", err)
	}
	own["bin/postgres"] = "\x00 '--prefix=/opt/pg/a' \x00 '--prefix=/opt/pg/ab' '--enable-depend'\x00"
	err := checkPrefix(writeTree(t, own), "/opt/pg/a")
	if err == nil || !strings.Contains(err.Error(), "bin/postgres names the prefix /opt/pg/ab") {
		t.Errorf("an install with another build's object: %v, want an error naming bin/postgres and /opt/pg/ab", err)
	}
}
