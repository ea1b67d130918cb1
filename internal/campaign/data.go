package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// baseConf is initdb's postgresql.conf, kept so each campaign renders its
// settings onto a clean copy instead of stacking them.
const baseConf = "postgresql.conf.pgbench-base"

// Stamp describes a loaded dataset, next to its data directory
// (ROOT/<variant>.stamp.json), so a later campaign can reuse it.
type Stamp struct {
	BinDir         string `json:"bin_dir"`
	Version        string `json:"version"`
	CatalogVersion string `json:"catalog_version"`
	// Workload is ModeTPCC for a TPC-C dataset of Warehouses loaded by
	// Driver (tpcc.Version), "" for pgbench's tables at Scale.
	Workload   string    `json:"workload,omitempty"`
	Scale      int       `json:"scale"`
	Warehouses int       `json:"warehouses,omitempty"`
	Driver     string    `json:"driver,omitempty"`
	LoadedAt   time.Time `json:"loaded_at"`
	ClonedFrom string    `json:"cloned_from,omitempty"`
	// LoadSeconds, Bytes and LoadCheck are a TPC-C load's time, the
	// database's size after it and its consistency check.
	LoadSeconds float64                  `json:"load_seconds,omitempty"`
	Bytes       int64                    `json:"bytes,omitempty"`
	LoadCheck   *report.ConsistencyCheck `json:"load_check,omitempty"`
}

func stampPath(root, variant string) string { return filepath.Join(root, variant+".stamp.json") }

func readStamp(path string) (*Stamp, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Stamp
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &s, nil
}

func writeStamp(path string, s *Stamp) error {
	return atomicfile.WriteJSON(path, s, 0o644)
}

// postgresOwner is the uid/gid files for the server must belong to when
// running as root; ok is false otherwise.
func postgresOwner() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u, err := user.Lookup(pgctl.DefaultUser)
	if err != nil {
		return 0, 0, false
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, true
}

// mkdirFor makes dir and hands it to the PostgreSQL user, so pgbench (which
// runs as that user) can write its logs there.
func mkdirFor(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	if uid, gid, ok := postgresOwner(); ok {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	return nil
}

// stopStale stops a server left running in dataDir by a runner that died
// (kill -9 leaves its postmaster behind): SIGINT is PostgreSQL's fast
// shutdown, and it needs no binaries, so it works from --remove-data too.
// A postmaster.pid that survived a reboot can name any process, so the pid
// is only signalled when isPostmasterOf confirms it is that server.
func stopStale(ctx context.Context, dataDir string) error {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return nil
	}
	pidDir := ""
	if len(lines) > 1 {
		pidDir = strings.TrimSpace(lines[1])
	}
	if !isPostmasterOf(pid, dataDir, pidDir) {
		return nil
	}
	if err := proc.Signal(pid, syscall.SIGINT); err != nil {
		if errors.Is(err, proc.ErrGone) {
			return nil
		}
		return fmt.Errorf("stop server %d in %s: %w", pid, dataDir, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if !proc.Alive(pid) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("server %d in %s did not stop within 90s", pid, dataDir)
}

// isPostmasterOf reports whether pid is a PostgreSQL server of dataDir: its
// executable is named postgres (or postmaster), and its command line or
// the data directory line of its postmaster.pid (pidDir) names dataDir.
func isPostmasterOf(pid int, dataDir, pidDir string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	// A binary replaced by a package upgrade reads "postgres (deleted)".
	switch filepath.Base(strings.TrimSuffix(exe, " (deleted)")) {
	case "postgres", "postmaster":
	default:
		return false
	}
	if sameDir(pidDir, dataDir) {
		return true
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		// -D DIR, -DDIR or --data-directory=DIR / -c data_directory=DIR.
		for _, p := range []string{"-D", "--data-directory=", "data_directory="} {
			arg = strings.TrimPrefix(arg, p)
		}
		if sameDir(arg, dataDir) {
			return true
		}
	}
	return false
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// LockFile is the lock (holding the owner's pid) that a runner keeps on a
// campaign directory while it works there.
const LockFile = ".lock"

// lockOut takes an exclusive flock on outDir/.lock, so two runners never
// work on one campaign at once, and writes our pid into it. The lock goes
// with the process, so a runner that dies leaves no stale lock behind.
func lockOut(outDir string) (release func(), err error) {
	path := filepath.Join(outDir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	lock, err := filelock.Try(f, filelock.Exclusive)
	if err != nil {
		defer f.Close()
		if errors.Is(err, filelock.ErrHeld) {
			b, _ := io.ReadAll(f)
			pid := strings.TrimSpace(string(b))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("campaign %s is in use by another pgbench-runner (pid %s)", outDir, pid)
		}
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { lock.Close() }, nil
}

// isDataDir reports whether dir looks like a PostgreSQL data directory.
func isDataDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

// looksLikeDataDir also accepts what an interrupted initdb leaves behind:
// it makes global/ and pg_wal/ before it writes PG_VERSION.
func looksLikeDataDir(dir string) bool {
	for _, f := range []string{"PG_VERSION", "global", "pg_wal", "base", "postgresql.conf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// removeDataDir deletes a data directory this runner made, refusing
// anything that is not one (a mistyped --data-dir must not eat files).
func removeDataDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	if len(ents) > 0 && !looksLikeDataDir(dir) {
		return fmt.Errorf("%s is not a PostgreSQL data directory; refusing to delete it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// copyDir copies a stopped data directory with cp -a, which keeps owners
// and modes (PostgreSQL insists on 0700 and its own uid).
func copyDir(ctx context.Context, src, dst string) error {
	if _, err := remote.RunLocal(ctx, remote.Command{Args: []string{"cp", "-a", src, dst}}, remote.LocalOptions{}); err != nil {
		return fmt.Errorf("copy data directory: %w", err)
	}
	// The unix socket lives in the data directory: drop what the source's
	// server left there.
	for _, pat := range []string{"postmaster.pid", ".s.PGSQL.*"} {
		m, _ := filepath.Glob(filepath.Join(dst, pat))
		for _, f := range m {
			os.Remove(f)
		}
	}
	return nil
}

// renderConf restores initdb's postgresql.conf and appends settings.
func renderConf(c *pgctl.Cluster, settings map[string]string) error {
	conf := filepath.Join(c.DataDir, "postgresql.conf")
	base := filepath.Join(c.DataDir, baseConf)
	b, err := os.ReadFile(base)
	if errors.Is(err, os.ErrNotExist) {
		if b, err = os.ReadFile(conf); err == nil {
			err = atomicfile.WriteFile(base, b, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("base config of %s: %w", c.DataDir, err)
	}
	if err := atomicfile.WriteFile(conf, b, 0o600); err != nil {
		return err
	}
	if uid, gid, ok := postgresOwner(); ok {
		os.Chown(conf, uid, gid)
		os.Chown(base, uid, gid)
	}
	return c.SetConfig(settings)
}

// RemoveData stops any server of the campaign in outDir still running and
// deletes its variant data directories and stamps, keeping the reports.
// dataDir "" means outDir/data. The variants come from the journal, or, when
// there is none, from the data directories found under dataDir. Removing
// what is already gone is not an error.
func RemoveData(ctx context.Context, outDir, dataDir string) ([]string, error) {
	if dataDir == "" {
		dataDir = filepath.Join(outDir, "data")
	}
	// A missing OUT has no runner working in it (Execute makes it first).
	if _, err := os.Stat(outDir); err == nil {
		release, err := lockOut(outDir)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	var names []string
	if h, ok := readHeader(outDir); ok {
		for _, v := range h.Definition.Variants {
			names = append(names, v.Name)
		}
	}
	if names == nil {
		ents, _ := os.ReadDir(dataDir)
		for _, e := range ents {
			if e.IsDir() && isDataDir(filepath.Join(dataDir, e.Name())) {
				names = append(names, e.Name())
			}
		}
	}
	var removed []string
	for _, n := range names {
		dir := filepath.Join(dataDir, n)
		if err := stopStale(ctx, dir); err != nil {
			return removed, err
		}
		if _, err := os.Stat(dir); err == nil {
			removed = append(removed, dir)
		}
		if err := removeDataDir(dir); err != nil {
			return removed, err
		}
		os.Remove(stampPath(dataDir, n))
	}
	// The root goes too when nothing else lives there.
	os.Remove(dataDir)
	return removed, nil
}
