// Package pgctl drives a PostgreSQL installation on the local host: initdb,
// settings in postgresql.conf, `postgres -C`, and start/stop with pg_ctl.
// PostgreSQL refuses to run as root, so when the caller is root every command
// runs as an unprivileged user (by default "postgres").
package pgctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// DefaultUser is the account commands run as when the caller is root.
const DefaultUser = "postgres"

// Cluster is one data directory served by the binaries in BinDir.
type Cluster struct {
	BinDir  string
	DataDir string
	// User runs the commands when the caller is root; "" means DefaultUser.
	User string
	// Wrap, when set, is a command prefix Start runs pg_ctl under, e.g.
	// ["numactl", "--cpunodebind=0"]: the postmaster inherits the CPU and
	// memory policy, and so does every backend it forks.
	Wrap []string
}

// credential returns the uid/gid to run as, or nil when not root.
func (c *Cluster) credential() (*proc.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := c.User
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("look up user %s (PostgreSQL does not run as root): %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &proc.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// killGrace is how long a cancelled PostgreSQL command gets between SIGTERM
// and SIGKILL: initdb removes the data directory it was making.
const killGrace = 10 * time.Second

// Command is the command line that runs prog from BinDir with args, under
// the command prefix wrap (e.g. numactl with a CPU binding) when one is
// given, in / with the C locale. Run runs it.
func (c *Cluster) Command(wrap []string, prog string, args ...string) remote.Command {
	argv := append(append(append([]string{}, wrap...), filepath.Join(c.BinDir, prog)), args...)
	return remote.Command{Args: argv, Dir: "/", Env: map[string]string{"LC_ALL": "C", "LANG": "C"}, KillGrace: killGrace}
}

// Run runs cmd as the PostgreSQL user when the caller is root, the way every
// local command runs (remote.RunLocal): in its own process group, all of it
// stopped on cancel. A command that exits non-zero returns its Result with
// a *remote.ExitError; one that cannot start, a *remote.StartError.
func (c *Cluster) Run(ctx context.Context, cmd remote.Command) (remote.Result, error) {
	cred, err := c.credential()
	if err != nil {
		return remote.Result{}, err
	}
	return remote.RunLocal(ctx, cmd, remote.LocalOptions{Credential: cred})
}

// PsqlArgs are the psql arguments that reach this cluster over its unix socket.
func (c *Cluster) PsqlArgs(sql string) []string {
	return []string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", c.SocketDir(), "-U", "postgres", "-d", "postgres", "-c", sql}
}

// Psql runs sql with psql against the running cluster and returns its output.
func (c *Cluster) Psql(ctx context.Context, sql string) (string, error) {
	out, err := c.run(ctx, "psql", c.PsqlArgs(sql)...)
	return strings.TrimSpace(out), err
}

func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	return c.runWrapped(ctx, nil, prog, args...)
}

func (c *Cluster) runWrapped(ctx context.Context, wrap []string, prog string, args ...string) (string, error) {
	res, err := c.Run(ctx, c.Command(wrap, prog, args...))
	return string(res.Stdout), err
}

// Major returns the PostgreSQL major version of BinDir ("postgres (PostgreSQL) 15.8").
func (c *Cluster) Major(ctx context.Context) (int, error) {
	out, err := c.run(ctx, "postgres", "--version")
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`\(PostgreSQL\) (\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("parse postgres --version %q", strings.TrimSpace(out))
	}
	return strconv.Atoi(m[1])
}

// ScratchDir makes a fresh directory for a data directory that the
// PostgreSQL user can reach, and returns the data directory path inside it
// (not yet created). Remove the returned parent when done.
func ScratchDir(base string) (parent, dataDir string, err error) {
	parent, err = os.MkdirTemp(base, "pgbench-pg-")
	if err != nil {
		return "", "", fmt.Errorf("make scratch dir: %w", err)
	}
	// MkdirTemp makes it 0700; the postgres user must traverse it.
	if err := os.Chmod(parent, 0o755); err != nil {
		return "", "", fmt.Errorf("chmod %s: %w", parent, err)
	}
	return parent, filepath.Join(parent, "data"), nil
}

// InitDB creates DataDir with initdb, owned by the PostgreSQL user.
func (c *Cluster) InitDB(ctx context.Context) error {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	cred, err := c.credential()
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if cred != nil {
		if err := os.Chown(c.DataDir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("initdb: chown %s: %w", c.DataDir, err)
		}
	}
	if _, err := c.run(ctx, "initdb", "-D", c.DataDir, "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale", "C"); err != nil {
		return fmt.Errorf("initdb %s: %w", c.DataDir, err)
	}
	return nil
}

// QuoteValue quotes a postgresql.conf value.
func QuoteValue(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'"
}

// ValidSettingName reports whether name looks like a postgresql.conf
// parameter name (custom ones have a dot: auto_explain.log_min_duration).
func ValidSettingName(name string) bool { return settingName.MatchString(name) }

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// maxSocketPath is the longest Unix socket path the kernel takes (sun_path
// is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// SocketDir is where the server's Unix socket is: DataDir, unless the
// socket path would be too long for the kernel, in which case a short
// directory under /tmp named after DataDir.
func (c *Cluster) SocketDir() string {
	if len(c.DataDir)+len("/.s.PGSQL.65535") <= maxSocketPath {
		return c.DataDir
	}
	sum := sha256.Sum256([]byte(c.DataDir))
	return filepath.Join(os.TempDir(), "pgbench-sock-"+hex.EncodeToString(sum[:6]))
}

// makeSocketDir creates SocketDir when it is not DataDir, owned by the
// PostgreSQL user.
func (c *Cluster) makeSocketDir() (string, error) {
	dir := c.SocketDir()
	if dir == c.DataDir {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make socket directory %s: %w", dir, err)
	}
	cred, err := c.credential()
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	return dir, nil
}

// SetConfig appends settings to postgresql.conf; later lines win, so this
// overrides anything initdb wrote. It also keeps the server off the network:
// a Unix socket only, in SocketDir.
func (c *Cluster) SetConfig(settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if !settingName.MatchString(k) {
			return fmt.Errorf("setting name %q is not valid", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# pgbench-runner\n")
	sock, err := c.makeSocketDir()
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "listen_addresses = ''\nunix_socket_directories = %s\n", QuoteValue(sock))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, QuoteValue(settings[k]))
	}
	path := filepath.Join(c.DataDir, "postgresql.conf")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Show returns `postgres -D DataDir -C name`: the value the server would
// use, including runtime-computed ones such as shared_memory_size.
func (c *Cluster) Show(ctx context.Context, name string) (string, error) {
	out, err := c.run(ctx, "postgres", "-D", c.DataDir, "-C", name)
	if err != nil {
		return "", fmt.Errorf("postgres -C %s: %w", name, err)
	}
	return strings.TrimSpace(out), nil
}

// SharedMemory is the segment PostgreSQL would allocate with DataDir's settings.
type SharedMemory struct {
	Bytes         int64 // shared_memory_size
	HugePages     int64 // shared_memory_size_in_huge_pages
	HugePageBytes int64 // the huge page size it was computed for
}

// SharedMemorySize asks the server itself for its segment size (PostgreSQL
// 15 and later), because it is larger than shared_buffers: buffer
// descriptors, WAL buffers and lock tables live there too.
func (c *Cluster) SharedMemorySize(ctx context.Context) (*SharedMemory, error) {
	major, err := c.Major(ctx)
	if err != nil {
		return nil, err
	}
	if major < 15 {
		return nil, fmt.Errorf("PostgreSQL %d cannot report shared_memory_size_in_huge_pages: need PostgreSQL 15 or later", major)
	}
	size, err := c.Show(ctx, "shared_memory_size")
	if err != nil {
		return nil, err
	}
	// postgres -C prints integer settings in their base unit without a
	// suffix; shared_memory_size's unit is MB.
	if strings.IndexFunc(size, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		size += "MB"
	}
	b, err := ParseSize(size)
	if err != nil {
		return nil, fmt.Errorf("shared_memory_size: %w", err)
	}
	hp, err := c.Show(ctx, "shared_memory_size_in_huge_pages")
	if err != nil {
		return nil, err
	}
	pages, err := strconv.ParseInt(hp, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("parse shared_memory_size_in_huge_pages %q: %w", hp, err)
	}
	if pages < 0 {
		return nil, fmt.Errorf("PostgreSQL reports no huge page support on this host (shared_memory_size_in_huge_pages = %d)", pages)
	}
	sm := &SharedMemory{Bytes: b, HugePages: pages}
	if pages > 0 {
		// PostgreSQL rounds the segment up to whole pages.
		for _, sz := range []int64{2 << 20, 1 << 30} {
			if (b+sz-1)/sz == pages {
				sm.HugePageBytes = sz
				break
			}
		}
	}
	return sm, nil
}

// ParseSize parses a PostgreSQL memory value such as "145MB", "8kB", "2GB".
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse size %q: %w", s, err)
	}
	mult := map[string]int64{"": 1, "B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("parse size %q: unknown unit %q", s, unit)
	}
	return n * mult, nil
}

// HugePagesError says PostgreSQL refused to start because huge_pages=on and
// the pool could not hold its segment; it replaces the generic start failure.
type HugePagesError struct {
	Log string
}

func (e *HugePagesError) Error() string {
	return "huge pages misconfiguration: PostgreSQL refused to start with huge_pages=on because the huge-page pool " +
		"cannot hold its shared memory segment; reserve at least the pages `pgbench-runner hugepages plan --for-postgres` " +
		"gives (or lower shared_buffers) before starting. Server log: " + lastLines(e.Log, 4)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// LogFile is where Start writes the server log.
func (c *Cluster) LogFile() string { return filepath.Join(c.DataDir, "server.log") }

// Start starts the server with pg_ctl and waits until it accepts connections.
// A start refused for want of huge pages is a *HugePagesError. A start that
// fails or is cancelled stops the server it started, if any: pg_ctl puts
// the postmaster in a session of its own, beyond the reach of the process
// group that a cancel stops.
func (c *Cluster) Start(ctx context.Context) error {
	pidFile := filepath.Join(c.DataDir, "postmaster.pid")
	_, statErr := os.Stat(pidFile)
	_, err := c.runWrapped(ctx, c.Wrap, "pg_ctl", "-D", c.DataDir, "-l", c.LogFile(), "-w", "-t", "60", "start")
	if err == nil {
		return nil
	}
	if _, err := os.Stat(pidFile); err == nil && statErr != nil {
		// Only a server this call started: one that was running before is not ours.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
		c.run(stopCtx, "pg_ctl", "-D", c.DataDir, "-m", "immediate", "-w", "-t", "60", "stop")
		cancel()
	}
	log, _ := os.ReadFile(c.LogFile())
	if isHugePagesFailure(string(log)) {
		return &HugePagesError{Log: string(log)}
	}
	return fmt.Errorf("start PostgreSQL in %s: %w; server log: %s", c.DataDir, err, lastLines(string(log), 4))
}

// isHugePagesFailure recognises the server's refusal to start with
// huge_pages=on: mmap of the segment fails and the hint names huge pages.
func isHugePagesFailure(log string) bool {
	return strings.Contains(log, "could not map anonymous shared memory") &&
		(strings.Contains(log, "huge pages") || strings.Contains(log, "huge_pages"))
}

// Stop stops the server (fast shutdown) and waits for it.
func (c *Cluster) Stop(ctx context.Context) error {
	if _, err := c.run(ctx, "pg_ctl", "-D", c.DataDir, "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("stop PostgreSQL in %s: %w", c.DataDir, err)
	}
	return nil
}

// Scratch makes a scratch data directory with initdb and the given settings.
// The returned cleanup stops nothing; call Stop first if you started it.
func Scratch(ctx context.Context, binDir string, settings map[string]string) (*Cluster, func(), error) {
	parent, dataDir, err := ScratchDir("")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(parent) }
	c := &Cluster{BinDir: binDir, DataDir: dataDir}
	if err := c.InitDB(ctx); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := c.SetConfig(settings); err != nil {
		cleanup()
		return nil, nil, err
	}
	return c, cleanup, nil
}

// ControlData runs pg_controldata on DataDir and returns its fields by
// label ("Catalog version number", "Database system identifier", ...).
func (c *Cluster) ControlData(ctx context.Context) (map[string]string, error) {
	out, err := c.run(ctx, "pg_controldata", "-D", c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pg_controldata %s: %w", c.DataDir, err)
	}
	return ParseControlData(out), nil
}

// ParseControlData parses pg_controldata's "label: value" lines.
func ParseControlData(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// CatalogVersion is the "Catalog version number" of DataDir: two data
// directories with the same one can be served by each other's binaries.
func (c *Cluster) CatalogVersion(ctx context.Context) (string, error) {
	m, err := c.ControlData(ctx)
	if err != nil {
		return "", err
	}
	v := m["Catalog version number"]
	if v == "" {
		return "", fmt.Errorf("pg_controldata %s: no catalog version number", c.DataDir)
	}
	return v, nil
}

// HugePagesStatus returns `SHOW huge_pages_status` of the running server
// ("on", "off" or "unknown"); ok is false before PostgreSQL 17, which does
// not have the setting.
func (c *Cluster) HugePagesStatus(ctx context.Context) (status string, ok bool, err error) {
	major, err := c.Major(ctx)
	if err != nil {
		return "", false, err
	}
	if major < 17 {
		return "", false, nil
	}
	out, err := c.Psql(ctx, "SHOW huge_pages_status")
	if err != nil {
		return "", false, fmt.Errorf("show huge_pages_status: %w", err)
	}
	return out, true, nil
}
