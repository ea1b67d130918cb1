package pgbuild

import (
	"slices"
	"testing"
)

// What make does not follow starts the tree over; what it follows does
// not.
func TestBuildSystemFile(t *testing.T) {
	for path, want := range map[string]bool{
		"configure":                                    true,
		"configure.ac":                                 true,
		"aclocal.m4":                                   true,
		"config/c-compiler.m4":                         true,
		"src/template/linux":                           true,
		"src/makefiles/pgxs.mk":                        true,
		"src/Makefile.global.in":                       true,
		"src/Makefile.shlib":                           true,
		"src/backend/common.mk":                        true,
		"src/bin/pgbench/Makefile":                     true,
		"GNUmakefile.in":                               true,
		"src/include/pg_config.h.in":                   true,
		"src/interfaces/ecpg/include/ecpg_config.h.in": true,
		"src/include/pg_config_manual.h":               false,
		"src/include/common/logging.h":                 false,
		"src/bin/pgbench/pgbench.c":                    false,
		"src/backend/utils/misc/guc_tables.c":          false,
		"src/bin/psql/create_help.pl":                  false,
		"doc/src/sgml/config.sgml":                     false,
		"src/backend/catalog/pg_proc.dat":              false,
		"contrib/pg_prewarm/pg_prewarm.c":              false,
		"contrib/pg_prewarm/Makefile":                  true,
		"src/test/regress/expected/int4.out":           false,
		"src/interfaces/libpq/libpq.pc.in.bak":         false,
	} {
		if got := buildSystemFile(path); got != want {
			t.Errorf("buildSystemFile(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestPatchedBuildFiles(t *testing.T) {
	patch := []byte("--- a/src/bin/pgbench/pgbench.c\t2025-01-01\n+++ b/src/bin/pgbench/pgbench.c\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/src/bin/pgbench/Makefile b/src/bin/pgbench/Makefile\n--- a/src/bin/pgbench/Makefile\n+++ b/src/bin/pgbench/Makefile\n@@ -1 +1 @@\n-a\n+b\n" +
		"--- /dev/null\n+++ b/configure.ac\n")
	got := patchedBuildFiles([][]byte{patch})
	if want := []string{"src/bin/pgbench/Makefile", "configure.ac"}; !slices.Equal(got, want) {
		t.Errorf("patchedBuildFiles = %q, want %q", got, want)
	}
	if got := patchedBuildFiles([][]byte{patch[:60]}); len(got) != 0 {
		t.Errorf("a patch of pgbench.c changes build files %q", got)
	}
}

// The build key of an incremental build covers --enable-depend, once.
func TestWithDepend(t *testing.T) {
	in := []string{"--without-icu"}
	if got := withDepend(in); !slices.Equal(got, []string{"--without-icu", DependFlag}) || len(in) != 1 {
		t.Errorf("withDepend = %q (input now %q)", got, in)
	}
	if got := withDepend([]string{DependFlag, "--without-icu"}); !slices.Equal(got, []string{DependFlag, "--without-icu"}) {
		t.Errorf("withDepend twice = %q", got)
	}
}
