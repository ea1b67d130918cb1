package pgbuild

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultCCacheDir is where builds keep ccache's cache when they use it.
const DefaultCCacheDir = "/var/cache/pgbench/ccache"

// ccacheCompilers are the compiler names configure may pick; each gets a
// link to ccache ahead of it on PATH.
var ccacheCompilers = []string{"cc", "gcc", "clang"}

// ccacheEnv is the environment that sends a build in work through ccache,
// with its cache in dir. configure still finds "gcc" (so pg_config --cc
// names the compiler, not ccache): a directory of links named after the
// compilers, each to ccache, goes first on PATH, and ccache runs the real
// compiler it finds after itself. Every build has its own work directory,
// so CCACHE_BASEDIR makes the paths under it relative and CCACHE_NOHASHDIR
// leaves the working directory out of the hash: the objects of one build
// serve the next. An incremental build's sources are in a tree of its
// own: base is the directory whose paths are made relative.
func ccacheEnv(dir, work, base string) ([]string, error) {
	ccache, err := exec.LookPath("ccache")
	if err != nil {
		return nil, fmt.Errorf("ccache: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make ccache directory %s: %w", dir, err)
	}
	links := filepath.Join(work, "ccache-bin")
	if err := os.MkdirAll(links, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", links, err)
	}
	for _, cc := range ccacheCompilers {
		if _, err := exec.LookPath(cc); err != nil {
			continue
		}
		if err := os.Symlink(ccache, filepath.Join(links, cc)); err != nil {
			return nil, fmt.Errorf("link %s to ccache: %w", cc, err)
		}
	}
	path := links + string(os.PathListSeparator) + os.Getenv("PATH")
	return []string{
		"PATH=" + path,
		"CCACHE_DIR=" + dir,
		"CCACHE_BASEDIR=" + base,
		"CCACHE_NOHASHDIR=1",
	}, nil
}

// configInfo is the one source file of PostgreSQL that compiles in what
// pg_config.h names the prefix by (CONFIGURE_ARGS, which pg_config
// --configure prints), and the objects src/common builds from it.
const configInfo = "src/common/config_info.c"

var configInfoObjects = []string{"config_info.o", "config_info_shlib.o", "config_info_srv.o"}

// directModeEnv lets ccache take a build's objects from the cache without
// running the preprocessor (its direct mode) when only the prefix differs
// from the build that compiled them. Every source includes pg_config.h,
// and configure writes the prefix into it (CONFIGURE_ARGS), so each new
// prefix would miss in direct mode and preprocess every file again. When
// config_info.c alone uses CONFIGURE_ARGS, its objects are compiled first
// without ccache (after the headers the backend generates); for every
// other compile ccache leaves pg_config.h out of its manifests (at each
// depth the makefiles include it from) and hashes a copy of it without
// that line instead, so any other difference in configure's results still
// misses. The environment is nil, and builds preprocess as before, when
// other sources use CONFIGURE_ARGS or src/common lacks those objects.
// checkPrefix, after the install, is the net under all of it.
func (p *plan) directModeEnv(b *builder, srcDir string) ([]string, error) {
	users, err := configureArgsUsers(srcDir)
	if err != nil {
		return nil, err
	}
	if !configInfoAlone(users) {
		b.note("make", fmt.Sprintf("ccache preprocesses every file: the sources that use CONFIGURE_ARGS are [%s], not %s alone", strings.Join(users, ", "), configInfo))
		return nil, nil
	}
	header, err := os.ReadFile(filepath.Join(srcDir, "src/include/pg_config.h"))
	if err != nil {
		return nil, fmt.Errorf("ccache direct mode: %w", err)
	}
	var kept []string
	for _, line := range strings.Split(string(header), "\n") {
		if !strings.Contains(line, "CONFIGURE_ARGS") {
			kept = append(kept, line)
		}
	}
	hashed := filepath.Join(b.work, "pg_config.h.ccache")
	if err := os.WriteFile(hashed, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return nil, fmt.Errorf("ccache direct mode: %w", err)
	}
	// The server's object includes headers the backend generates.
	if _, err := b.quiet(srcDir, "make", "-n", "-C", "src/backend", "generated-headers"); err != nil {
		b.note("make", "ccache preprocesses every file: src/backend has no generated-headers target")
		return nil, nil
	}
	if _, err := b.run("make", srcDir, nil, "make", "-C", "src/backend", "generated-headers"); err != nil {
		return nil, err
	}
	var objects []string
	for _, o := range configInfoObjects {
		// make -n fails for an object this version's src/common lacks.
		if _, err := b.quiet(srcDir, "make", "-n", "-C", "src/common", o); err == nil {
			objects = append(objects, o)
		}
	}
	if len(objects) == 0 {
		b.note("make", "ccache preprocesses every file: src/common builds none of "+strings.Join(configInfoObjects, ", "))
		return nil, nil
	}
	if _, err := b.run("make", srcDir, []string{"CCACHE_DISABLE=1"}, "make", append([]string{"-C", "src/common"}, objects...)...); err != nil {
		return nil, err
	}
	var ignore []string
	for depth := 0; depth <= 8; depth++ {
		ignore = append(ignore, strings.Repeat("../", depth)+"src/include/pg_config.h")
	}
	return []string{
		"CCACHE_IGNOREHEADERS=" + strings.Join(ignore, string(os.PathListSeparator)),
		"CCACHE_EXTRAFILES=" + hashed,
	}, nil
}

// configureArgsUsers are the C sources and headers, and the bison and
// flex sources that generate C, under srcDir (relative) that name
// CONFIGURE_ARGS, but for pg_config.h, which defines it.
func configureArgsUsers(srcDir string) ([]string, error) {
	var users []string
	err := filepath.WalkDir(srcDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !compiledExt[filepath.Ext(path)] {
			return nil
		}
		rel, _ := filepath.Rel(srcDir, path)
		if rel == "src/include/pg_config.h" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if configureArgsRE.Match(b) {
			users = append(users, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for CONFIGURE_ARGS: %w", err)
	}
	return users, nil
}

// configInfoAlone says whether config_info.c is the one user of
// CONFIGURE_ARGS among users (configureArgsUsers).
func configInfoAlone(users []string) bool {
	return len(users) == 1 && users[0] == configInfo
}

var configureArgsRE = regexp.MustCompile(`\bCONFIGURE_ARGS\b`)

// compiledExt are the extensions of the files whose text reaches the
// compiler: C, and bison and flex sources.
var compiledExt = map[string]bool{".c": true, ".h": true, ".y": true, ".l": true}
