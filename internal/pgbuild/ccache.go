package pgbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
