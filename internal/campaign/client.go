package campaign

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/observe"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbench"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

// A campaign with a client host runs every PostgreSQL server here and
// every pgbench on the client host, over the network. The runner reaches
// the client host over SSH (internal/remote) with a key it reads from
// ClientKeyFile, never from its command line; the client host learns the
// server's password on its pgbench's standard input. The server listens
// only on the address the client host reaches it by, and its pg_hba.conf
// admits only the client host's address, with scram-sha-256.

// ClientUser is the role pgbench logs in as from the client host.
const ClientUser = "postgres"

// ParseClientHost splits [user@]host[:port] into its parts, user root and
// port 22 by default.
func ParseClientHost(s string) (user, host string, port int, err error) {
	user, hp, ok := strings.Cut(s, "@")
	if !ok {
		user, hp = "root", s
	}
	host, port = hp, 22
	if h, p, err := net.SplitHostPort(hp); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return "", "", 0, fmt.Errorf("client host %q: port %q is not a port number", s, p)
		}
		host, port = h, n
	}
	if user == "" || host == "" || strings.ContainsAny(host, "@/ ") {
		return "", "", 0, fmt.Errorf("client host %q: want [user@]host[:port]", s)
	}
	return user, host, port, nil
}

// checkClient checks the client host's part of the definition.
func (c *Config) checkClient(f *faults) {
	switch {
	case c.ClientHost == "" && c.ClientBinDir != "":
		f.add(at("client-bin-dir"), "Client Bin Dir Without Client Host", "%s applies only with %s", ref("client-bin-dir"), ref("client-host"))
		return
	case c.ClientHost == "":
		return
	}
	if _, _, _, err := ParseClientHost(c.ClientHost); err != nil {
		f.add(at("client-host"), "Invalid Client Host", "%v", err)
	}
	if c.ClientBinDir == "" {
		f.add(at("client-bin-dir"), "Missing Client Bin Dir", "%s needs %s, the directory with pgbench on that host", ref("client-host"), ref("client-bin-dir"))
	}
	if c.ClientHostKey == "" {
		f.add(at("client-host-key"), "Missing Client Host Key", "%s needs %s, the host key that host must present", ref("client-host"), ref("client-host-key"))
	}
}

// clientSide is the client host of a running campaign.
type clientSide struct {
	ex   *remote.SSHExecutor
	name string // the client host as configured
	bin  string
	// facts has the client host's address as the server sees it and the
	// server's as the client host reaches it.
	facts    report.ClientHost
	password string
	work     string // the campaign's directory on the client host
	arch     string // uname -m
	// driver is the TPC-C driver's executable there: this runner, copied
	// into work for a campaign of mode tpcc from its path here, localDriver.
	driver, localDriver string
	// lastOS is the OS counters around the last run there (takeOS).
	lastOS *clientOS
	// wrap is numactl with ClientNUMA's policy, before every command of
	// the campaign there; pinnedCPUs the CPUs that policy allows.
	wrap       []string
	pinnedCPUs int
	unlock     func()
}

// clientProbe prints what the runner learns of the client host: the
// addresses of the SSH connection (the server's, the client host's), its
// pgbench's version (or nothing when there is none) and its facts.
const clientProbe = `echo "$SSH_CONNECTION"
if test -x "$1/pgbench"; then "$1/pgbench" --version; else echo; fi
uname -r
nproc
sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\) kB$/\1/p' /proc/meminfo
sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1
uname -m
mkdir -p -m 700 "$2" && echo "$2"`

// connectClient reaches the client host, learns the addresses and facts,
// checks its pgbench and takes its host lock. Everything it refuses, it
// refuses before any server starts.
func (e *engine) connectClient(ctx context.Context) error {
	cfg := e.cfg
	user, host, port, err := ParseClientHost(cfg.ClientHost)
	if err != nil {
		return err
	}
	key, err := cfg.clientKey()
	if err != nil {
		return err
	}
	no := false
	ex, err := remote.DialSSH(ctx, remote.SSHConfig{Host: host, Port: port, User: user, PrivateKey: key, HostKey: cfg.ClientHostKey, Sudo: &no})
	if err != nil {
		return fmt.Errorf("the server's host cannot reach the client host %s over SSH: %w", cfg.ClientHost, err)
	}
	cs := &clientSide{ex: ex, name: cfg.ClientHost, bin: cfg.ClientBinDir}
	e.client = cs
	// The campaign's directory there is named by its key, so a campaign
	// resumed after a kill takes up (and at its end removes) the one the
	// killed process left.
	res, err := ex.Run(ctx, remote.Command{Args: []string{"sh", "-c", clientProbe, "sh", cfg.ClientBinDir, "/tmp/pgbench-client-" + cfg.Key()}})
	if err != nil {
		return fmt.Errorf("client host %s: %w", cfg.ClientHost, err)
	}
	if err := cs.readProbe(string(res.Stdout)); err != nil {
		return err
	}
	if err := cs.upload(ctx, "reach.sql", "SELECT 1;\n"); err != nil {
		return err
	}
	if cfg.tpcc() {
		if err := cs.uploadDriver(ctx); err != nil {
			return err
		}
	}
	if err := cs.pin(ctx, cfg.ClientNUMA); err != nil {
		return err
	}
	b := make([]byte, 24)
	rand.Read(b)
	cs.password = hex.EncodeToString(b)
	return e.lockClient(ctx)
}

// readProbe reads clientProbe's output.
func (cs *clientSide) readProbe(out string) error {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 8 {
		return fmt.Errorf("client host %s: unexpected answer to the probe: %q", cs.name, out)
	}
	conn := strings.Fields(lines[0])
	if len(conn) != 4 {
		return fmt.Errorf("client host %s: SSH_CONNECTION is %q, want 4 fields", cs.name, lines[0])
	}
	// Known first, so that a refused campaign removes it too.
	cs.work, cs.arch = lines[7], lines[6]
	if lines[1] == "" {
		return Invalid(at("client-bin-dir"), "Incomplete Client Bin Dir", "client host %s: %s has no pgbench", cs.name, cs.bin)
	}
	cpus, err := strconv.Atoi(lines[3])
	if err != nil || cpus < 1 {
		return fmt.Errorf("client host %s: nproc printed %q, want a number of CPUs", cs.name, lines[3])
	}
	// MemTotal in kB: awk would print a total past 2^31 bytes in
	// exponent form (mawk's %.6g), which is no integer.
	memKB, err := strconv.ParseInt(lines[4], 10, 64)
	if err != nil || memKB < 1 {
		return fmt.Errorf("client host %s: /proc/meminfo's MemTotal is %q, want a number of kB", cs.name, lines[4])
	}
	cs.facts = report.ClientHost{Address: conn[2], ServerAddress: conn[0], PgbenchVersion: lines[1], Kernel: lines[2], CPUModel: lines[5],
		CPUs: cpus, MemoryBytes: memKB * 1024}
	return nil
}

// clientKey is the private key of the client host, from ClientKey or the
// file ClientKeyFile names ("-": standard input).
func (c *Config) clientKey() ([]byte, error) {
	if len(c.ClientKey) > 0 {
		return c.ClientKey, nil
	}
	switch c.ClientKeyFile {
	case "":
		// The ssh-agent, if any, holds it.
		return nil, nil
	case "-":
		// Read once per process: a bisect runs a campaign (a copy of its
		// Config) per round.
		stdinKey.once.Do(func() { stdinKey.b, stdinKey.err = io.ReadAll(os.Stdin) })
		if stdinKey.err != nil {
			return nil, fmt.Errorf("read the client host's key from standard input: %w", stdinKey.err)
		}
		c.ClientKey = stdinKey.b
		return stdinKey.b, nil
	}
	b, err := os.ReadFile(c.ClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("read the client host's key: %w", err)
	}
	c.ClientKey = b
	return b, nil
}

// stdinKey is the client host's key as standard input gave it.
var stdinKey struct {
	once sync.Once
	b    []byte
	err  error
}

// upload writes a small file into the campaign's directory on the client.
func (cs *clientSide) upload(ctx context.Context, name, content string) error {
	if _, err := cs.ex.Upload(ctx, strings.NewReader(content), path.Join(cs.work, name), 0o644); err != nil {
		return fmt.Errorf("client host %s: %w", cs.name, err)
	}
	return nil
}

// pin readies the client host's pinning: numactl there must take spec,
// and says how many CPUs it leaves pgbench.
func (cs *clientSide) pin(ctx context.Context, spec string) error {
	args, err := ParseNUMA(spec)
	if err != nil || len(args) == 0 {
		return err
	}
	wrap := append([]string{"numactl"}, args...)
	res, err := cs.ex.Run(ctx, remote.Command{Args: append(append([]string{}, wrap...), "nproc")})
	if err != nil {
		return &UnmetError{fmt.Errorf("client host %s cannot pin pgbench with %q (numactl %s): %w", cs.name, spec, strings.Join(args, " "), shortStderr(err, res))}
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil || n < 1 {
		return fmt.Errorf("client host %s: nproc under numactl %s printed %q", cs.name, strings.Join(args, " "), res.Stdout)
	}
	cs.wrap, cs.pinnedCPUs = wrap, n
	return nil
}

// unameArch is uname -m's name of each GOARCH the runner is built for.
var unameArch = map[string][]string{"amd64": {"x86_64"}, "arm64": {"aarch64", "arm64"}}

// uploadDriver copies this runner, the TPC-C driver, into the campaign's
// directory on the client host, which must be of the same architecture.
func (cs *clientSide) uploadDriver(ctx context.Context) error {
	if want := unameArch[runtime.GOARCH]; !slices.Contains(want, cs.arch) {
		return Invalid(at("client-host"), "Client Host Of Another Architecture",
			"client host %s is %s, and mode tpcc runs its driver, this %s runner, there: use a client host of the server's architecture", cs.name, cs.arch, runtime.GOARCH)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("tpcc: find this executable: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return fmt.Errorf("tpcc: %w", err)
	}
	defer f.Close()
	cs.driver, cs.localDriver = path.Join(cs.work, "pgbench-runner"), exe
	if _, err := cs.ex.Upload(ctx, f, cs.driver, 0o755); err != nil {
		return fmt.Errorf("client host %s: copy the TPC-C driver: %w", cs.name, err)
	}
	return nil
}

// lockClient holds the client host's lock (hostlock.ClientFile) for the
// rest of the campaign, with flock(1) in a session that lasts until close:
// two campaigns cannot share a client host.
func (e *engine) lockClient(ctx context.Context) error {
	cs := e.client
	locked := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan error, 1)
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stdin, w := io.Pipe()
	script := `mkdir -p "$(dirname "$1")" && chmod 1777 "$(dirname "$1")" 2>/dev/null; exec flock -x "$1" sh -c 'echo locked; exec cat >/dev/null'`
	go func() {
		_, err := cs.ex.Run(lctx, remote.Command{Args: []string{"sh", "-c", script, "sh", hostlock.ClientFile}, Stdin: stdin,
			OnStdout: func(line string) {
				if line == "locked" {
					close(locked)
				}
			}})
		done <- err
	}()
	cs.unlock = func() {
		close(stop)
		w.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
	}
	start := time.Now()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-locked:
			return nil
		case err := <-done:
			done <- err
			return fmt.Errorf("lock the client host %s: %w", cs.name, errors.Join(err, errors.New("the lock session ended")))
		case <-tick.C:
			e.emit(Event{Event: EventWaiting, Message: "waiting for the client host " + cs.name + ": another campaign holds it", ElapsedSeconds: ptr(time.Since(start).Seconds())})
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closeClient lets go of the client host: its lock and its directory.
func (e *engine) closeClient() {
	cs := e.client
	if cs == nil {
		return
	}
	if cs.unlock != nil {
		cs.unlock()
	}
	if cs.work != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs.ex.Run(ctx, remote.Command{Args: []string{"rm", "-rf", cs.work}})
		cancel()
	}
	cs.ex.Close()
}

// clientSettings are the server settings of a campaign with a client host:
// it listens only on the address the client host reaches it by.
func (e *engine) clientSettings(settings map[string]string) {
	if e.client == nil {
		return
	}
	settings["listen_addresses"] = e.client.facts.ServerAddress
	settings["password_encryption"] = "scram-sha-256"
}

// hbaMark ends each pg_hba.conf line a campaign with a client host adds.
const hbaMark = "# pgbench-runner client host"

// openToClient readies a server that is about to start for the client
// host: its pg_hba.conf admits the client host's address alone, over
// scram-sha-256, as ClientUser.
func (e *engine) openToClient(vs *variantState) error {
	if e.client == nil {
		return nil
	}
	p := filepath.Join(vs.cluster.DataDir, "pg_hba.conf")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasSuffix(l, hbaMark) {
			keep = append(keep, l)
		}
	}
	keep = append(keep, fmt.Sprintf("host all %s %s/32 scram-sha-256 %s", ClientUser, e.client.facts.Address, hbaMark))
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("variant %s: %w", vs.Name, err)
	}
	return nil
}

// admitClient gives ClientUser the campaign's password on a started
// server, over psql's standard input so it is on no command line, then
// checks that the client host reaches the server.
func (e *engine) admitClient(ctx context.Context, vs *variantState) error {
	if e.client == nil {
		return nil
	}
	args := vs.cluster.PsqlArgs("")
	cmd := vs.cluster.Command(nil, "psql", args[:len(args)-2]...)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("SET log_statement = 'none';\nSET log_min_duration_statement = -1;\nALTER ROLE %s PASSWORD '%s';\n", ClientUser, e.client.password))
	if _, err := vs.cluster.Run(ctx, cmd); err != nil {
		return fmt.Errorf("variant %s: set the client host's password: %w", vs.Name, err)
	}
	_, err := e.clientRTT(ctx, vs)
	return err
}

// clientRTT is the round trip, in milliseconds, between the client host
// and the server: pgbench's mean latency of SELECT 1 over one connection.
// Its failure is the client host not reaching the server.
func (e *engine) clientRTT(ctx context.Context, vs *variantState) (float64, error) {
	cs := e.client
	stdout, stderrText, _, err := e.clientPgbench(ctx, vs, []string{"-n", "-c", "1", "-t", "200", "-f", path.Join(cs.work, "reach.sql")}, "")
	if err != nil {
		return 0, fmt.Errorf("the client host %s (%s) cannot reach the server at %s:%d: %w", cs.name, cs.facts.Address, cs.facts.ServerAddress, serverPort(vs), err)
	}
	out, err := pgbench.ParseOutput(stdout + "\n" + stderrText)
	if err != nil {
		return 0, fmt.Errorf("round trip to the client host %s: %w", cs.name, err)
	}
	return out.LatencyAvgMS, nil
}

// serverPort is the port vs listens on.
func serverPort(vs *variantState) int {
	if p, err := strconv.Atoi(vs.settings["port"]); err == nil {
		return p
	}
	return 5432
}

// clientConnArgs are pgbench's connection arguments from the client host.
func (e *engine) clientConnArgs(vs *variantState) []string {
	return []string{"-h", e.client.facts.ServerAddress, "-p", strconv.Itoa(serverPort(vs)), "-U", ClientUser, "postgres"}
}

// clientRun runs pgbench on the client host in the directory $1, made if
// need be: the password comes on its standard input into PGPASSWORD, and
// the shell reports at the end of its stderr the CPU time pgbench used
// (times) and the host's /proc/stat and /proc/vmstat from before and after
// it. One SSH session per run: sessions cost a busy host seconds.
const clientRun = `IFS= read -r PGPASSWORD; export PGPASSWORD; PGCONNECT_TIMEOUT=10; export PGCONNECT_TIMEOUT
mkdir -p "$1" && cd "$1" || exit 1; shift
stat0=$(cat /proc/stat); vmstat0=$(cat /proc/vmstat)
"$@"; rc=$?
{ echo "` + timesMarker + `"; times
echo "` + osMarker + `stat0"; printf '%s\n' "$stat0"; echo "` + osMarker + `vmstat0"; printf '%s\n' "$vmstat0"
echo "` + osMarker + `stat1"; cat /proc/stat; echo "` + osMarker + `vmstat1"; cat /proc/vmstat; } >&2; exit $rc`

// The markers of clientRun's report: the times, then each file's text.
const (
	timesMarker = "pgbench-runner-times:"
	osMarker    = "pgbench-runner-os:"
)

// ClientHostCounters prefixes the OS counters of the client host, in a
// run's counters beside the server host's (os.*).
const ClientHostCounters = "client_host."

// clientOS is the client host's OS counters around one run there.
type clientOS struct{ before, after *observe.OSSnapshot }

// takeOS hands over the client host's OS counters around the last run
// there, once.
func (cs *clientSide) takeOS() *clientOS {
	s := cs.lastOS
	cs.lastOS = nil
	return s
}

var timesRE = regexp.MustCompile(`(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s`)

// clientPgbench runs pgbench with args on the client host against vs.
// With dir set, logs that args write under dir are written in a directory
// on the client host and brought back into dir.
func (e *engine) clientPgbench(ctx context.Context, vs *variantState, args []string, dir string) (stdout, stderrText string, res remote.Result, err error) {
	cs := e.client
	remoteDir, logs := cs.work, false
	if dir != "" {
		remoteDir = path.Join(cs.work, filepath.Base(dir))
		for i, a := range args {
			if b := strings.ReplaceAll(a, dir, remoteDir); b != a {
				args[i], logs = b, true
			}
		}
	}
	script := clientRun
	if logs {
		// As runStep empties a run's directory here: a campaign killed
		// during this run left its logs there (its pgbench, orphaned on
		// the client host, may even have gone on writing them), and a
		// resumed run must read only its own. In the same session.
		script = `rm -rf "$1" || exit 1` + "\n" + clientRun
	}
	res, err = cs.run(ctx, script, remoteDir, e.clientPgbenchArgv(vs, args))
	stdout, stderrText = string(res.Stdout), string(res.Stderr)
	if err != nil {
		return stdout, stderrText, res, err
	}
	if logs {
		if err := cs.fetch(ctx, remoteDir, dir); err != nil {
			return stdout, stderrText, res, err
		}
	}
	return stdout, stderrText, res, nil
}

// clientDriver runs the TPC-C driver drv (its executable replaced by the
// copy on the client host) there against vs, as clientPgbench runs
// pgbench: the password on its standard input, its CPU time from times.
// With dir set, its command line, stdout and stderr are kept there (file
// names prefixed with name).
func (e *engine) clientDriver(ctx context.Context, vs *variantState, action string, o tpcc.Options, drv []string, dir, name string, v any) (remote.Result, error) {
	cs := e.client
	argv := append([]string{}, cs.wrap...)
	for _, a := range drv {
		if a == cs.localDriver {
			a = cs.driver
		}
		argv = append(argv, a)
	}
	o.Conn = tpcc.Conn{Host: cs.facts.ServerAddress, Port: serverPort(vs), User: ClientUser, DB: "postgres"}
	argv = append(argv, append(o.Args(action), "--json")...)
	res, err := cs.run(ctx, clientRun, cs.work, argv)
	cs.keep(dir, name, remote.QuoteArgs(argv), res.Stdout, res.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("tpcc %s on the client host %s: %w", action, cs.name, shortStderr(err, res))
	}
	if err := json.Unmarshal(res.Stdout, v); err != nil {
		return res, fmt.Errorf("tpcc %s on the client host %s: decode its result: %w", action, cs.name, err)
	}
	return res, nil
}

// run runs argv on the client host under script (clientRun, maybe with a
// step before it) in the directory dir there, in one SSH session: the
// password on its standard input, the CPU times and OS counters of the
// report taken off its stderr (the counters kept for takeOS).
func (cs *clientSide) run(ctx context.Context, script, dir string, argv []string) (remote.Result, error) {
	cmd := remote.Command{Args: append([]string{"sh", "-c", script, "sh", dir}, argv...),
		Stdin: strings.NewReader(cs.password + "\n"), Env: map[string]string{"LC_ALL": "C"}, KillGrace: killGraceClient}
	res, err := cs.ex.Run(ctx, cmd)
	res.Stderr, cs.lastOS = cutReport(&res)
	return res, err
}

// keep writes a client-host command's line, stdout and stderr into dir
// (file names prefixed with name), as a local run keeps its own; nothing
// with dir "".
func (cs *clientSide) keep(dir, name, cmdline string, stdout, stderr []byte) {
	if dir == "" {
		return
	}
	os.WriteFile(filepath.Join(dir, name+"command"), []byte("# on the client host "+cs.name+"\n"+cmdline+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, name+"stdout"), stdout, 0o644)
	os.WriteFile(filepath.Join(dir, name+"stderr"), stderr, 0o644)
}

// clientPgbenchArgv is pgbench with args against vs, as the client host
// runs it: under its pinning, with the connection arguments.
func (e *engine) clientPgbenchArgv(vs *variantState, args []string) []string {
	argv := append(append([]string{}, e.client.wrap...), path.Join(e.client.bin, "pgbench"))
	return append(argv, append(args, e.clientConnArgs(vs)...)...)
}

// killGraceClient lets a cancelled pgbench end its connections.
const killGraceClient = 10 * time.Second

// cutReport takes clientRun's report off the end of res's stderr: the
// CPU times into res, the OS counters into the clientOS it returns (nil
// when the report is cut short, as by a cancel).
func cutReport(res *remote.Result) ([]byte, *clientOS) {
	text := string(res.Stderr)
	i := strings.LastIndex(text, timesMarker+"\n")
	if i < 0 || (i > 0 && text[i-1] != '\n') {
		return res.Stderr, nil
	}
	keep, report := text[:i], text[i+len(timesMarker)+1:]
	parts := strings.Split(report, "\n"+osMarker)
	// times prints the shell's own times, then its children's: pgbench's.
	if m := timesRE.FindAllStringSubmatch(parts[0], -1); len(m) >= 2 {
		res.UserTime = minSec(m[1][1], m[1][2])
		res.SystemTime = minSec(m[1][3], m[1][4])
	}
	files := map[string][]byte{}
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		files[name] = []byte(body)
	}
	var s *clientOS
	if before, err := observe.ParseOS(files["stat0"], files["vmstat0"]); err == nil {
		if after, err := observe.ParseOS(files["stat1"], files["vmstat1"]); err == nil {
			s = &clientOS{before, after}
		}
	}
	if keep == "" {
		return nil, s
	}
	return []byte(keep), s
}

func minSec(m, s string) time.Duration {
	mi, _ := strconv.Atoi(m)
	se, _ := strconv.ParseFloat(s, 64)
	return time.Duration(mi)*time.Minute + time.Duration(se*float64(time.Second))
}

// fetch brings the files of remoteDir on the client host into dir, as a
// tar stream, and removes remoteDir: one SSH session.
func (cs *clientSide) fetch(ctx context.Context, remoteDir, dir string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := untar(pr, dir)
		// A tar stream goes on past its end marker (padding to a whole
		// record): the session ends only once all of it is read.
		io.Copy(io.Discard, pr)
		done <- err
	}()
	_, err := cs.ex.Run(ctx, remote.Command{Args: []string{"sh", "-c", `tar -C "$1" -cf - . && rm -rf "$1"`, "sh", remoteDir}, Stdout: pw})
	pw.CloseWithError(err)
	terr := <-done
	if err != nil {
		return fmt.Errorf("client host %s: fetch the logs of %s: %w", cs.name, remoteDir, err)
	}
	if terr != nil {
		return fmt.Errorf("client host %s: fetch the logs of %s: %w", cs.name, remoteDir, terr)
	}
	return nil
}

// untar writes the regular files of a tar stream into dir, by their base
// names (the client host's directory is flat).
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.Create(filepath.Join(dir, filepath.Base(h.Name)))
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// clientPgbenchKept is clientPgbench for engine.pgbench: with dir set, the
// command line, stdout and stderr are kept there (file names prefixed with
// name), as for a local pgbench.
func (e *engine) clientPgbenchKept(ctx context.Context, vs *variantState, args []string, dir, name string) (stdout, stderrText string, res remote.Result, err error) {
	stdout, stderrText, res, err = e.clientPgbench(ctx, vs, args, dir)
	e.client.keep(dir, name, strings.Join(e.clientPgbenchArgv(vs, args), " "), []byte(stdout), []byte(stderrText))
	if err != nil {
		if ctx.Err() != nil {
			return stdout, stderrText, res, ctx.Err()
		}
		return stdout, stderrText, res, shortStderr(err, res)
	}
	return stdout, stderrText, res, nil
}

// measureRTT measures the round trip to the client host before the first
// run of each cell this process runs.
func (e *engine) measureRTT(ctx context.Context, vs *variantState, clients int) error {
	if e.client == nil {
		return nil
	}
	if _, ok := e.cellRTT[clients]; ok {
		return nil
	}
	rtt, err := e.clientRTT(ctx, vs)
	if err != nil {
		return err
	}
	if e.cellRTT == nil {
		e.cellRTT = map[int]float64{}
	}
	e.cellRTT[clients] = rtt
	e.phase("%d clients: round trip to the client host %s: %.3f ms", clients, e.client.name, rtt)
	return nil
}

var majorRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// checkClientVersion warns when the client host's pgbench is of another
// major version than vs's server: it works, but its protocol features
// differ.
func (e *engine) checkClientVersion(vs *variantState) {
	if e.client == nil {
		return
	}
	cm, sm := majorRE.FindStringSubmatch(e.client.facts.PgbenchVersion), majorRE.FindStringSubmatch(vs.version)
	if cm == nil || sm == nil || cm[1] == sm[1] {
		return
	}
	e.warn("the client host's pgbench is PostgreSQL %s (%s) and variant %s's server PostgreSQL %s (%s): it works, but its protocol features differ",
		cm[1], e.client.facts.PgbenchVersion, vs.Name, sm[1], vs.version)
}
