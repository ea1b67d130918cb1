package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// clientHostConfig is an A/A campaign whose pgbench runs on h, whose
// sshd the test machine reaches at h.Addr; the servers run here, and so
// listen on h.HostAddr, the address h reaches this machine by.
func clientHostConfig(t *testing.T, h *testhost.Host, bin string) *Config {
	return &Config{
		Variants: []Variant{{Name: "a", BinDir: bin, HugePages: "off"}, {Name: "b", BinDir: bin, HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{1, 2}, Duration: time.Second, Iterations: 2, Counters: true,
		OutDir:     scratch(t),
		ClientHost: "root@" + net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), ClientHostKey: h.HostKeyLine, ClientBinDir: bin,
		ClientKey: h.ClientKeyPEM,
	}
}

// TestClientHostCampaign runs an A/A campaign (loaded over the network,
// two client counts) with its pgbench on a client host, killed with
// SIGKILL mid-run and resumed: the runs journaled before the kill are
// kept, every pgbench runs in the client host's namespace, the servers
// listen on the address the client host reaches them by and admit only
// its address, the results name the client host and the round trip of
// each cell, the password is in no file of the campaign, and after the
// campaign nothing listens.
func TestClientHostCampaign(t *testing.T) {
	bin := needPostgres(t)
	h := testhost.New(t)
	cfg := clientHostConfig(t, h, bin)
	// A pgbench of the campaign reaches its server at h.HostAddr over the
	// network, or through a socket under its directory.
	w := testhost.WatchProcesses([]string{"pgbench"}, []string{h.HostAddr, filepath.Dir(cfg.OutDir)})
	// The child process reads the client host's key from a file.
	cfg.ClientKeyFile = filepath.Join(t.TempDir(), "client_key")
	if err := os.WriteFile(cfg.ClientKeyFile, h.ClientKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.ClientKey = nil
	before := killMidCampaign(t, cfg, 3, 8)
	j, err := openJournal(cfg.OutDir, cfg.definition(), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	earlier := j.Runs
	j.Close()
	res, err := Execute(context.Background(), cfg, nil)
	seen := w.Stop()["pgbench"]
	if err != nil {
		t.Fatalf("Execute after the kill: %v", err)
	}
	for _, r := range res.Runs {
		if e, ok := earlier[r.Seq]; ok && e.StartedAt != r.StartedAt {
			t.Errorf("run %d was measured again after the kill; %d runs were journaled before it", r.Seq, before)
		}
	}
	if ns := h.NetnsInode(); seen[ns] == 0 || len(seen) != 1 {
		t.Errorf("pgbench seen in network namespaces %v; want only in the client host's (%d)", seen, ns)
	}
	if c := res.Client; c == nil || c.Address != h.Addr || c.ServerAddress != h.HostAddr || c.CPUs < 1 || c.Kernel == "" || !strings.Contains(c.PgbenchVersion, "pgbench") {
		t.Errorf("results' client = %+v, want address %s, server address %s and its facts", c, h.Addr, h.HostAddr)
	}
	if len(res.Cells) != 2 || len(res.Runs) != 8 {
		t.Fatalf("%d cells, %d runs, want 2 and 8", len(res.Cells), len(res.Runs))
	}
	for _, c := range res.Cells {
		if len(c.Comparisons) != 1 || c.Comparisons[0].Verdict == "" {
			t.Errorf("cell %d: comparisons %+v, want a verdict", c.Clients, c.Comparisons)
		}
	}
	for _, r := range res.Runs {
		if r.NetworkRTTMS <= 0 || r.TPS <= 0 || r.LoggedTransactions <= 0 || r.Client == nil || r.Client.CPUSeconds <= 0 {
			t.Errorf("run %d: rtt %v ms, tps %v, %d logged, client %+v: want all measured on the client host; warnings %q", r.Seq, r.NetworkRTTMS, r.TPS, r.LoggedTransactions, r.Client, res.Warnings)
		}
		checkClientHostCounters(t, r)
	}
	for _, v := range res.Variants {
		if got := v.Settings["listen_addresses"]; got != h.HostAddr {
			t.Errorf("variant %s listen_addresses = %q, want %s", v.Name, got, h.HostAddr)
		}
		hba, err := os.ReadFile(filepath.Join(v.DataDir, "pg_hba.conf"))
		if err != nil {
			t.Fatal(err)
		}
		var host []string
		for _, l := range strings.Split(string(hba), "\n") {
			if strings.HasPrefix(l, "host") {
				host = append(host, l)
			}
		}
		want := "host all postgres " + h.Addr + "/32 scram-sha-256"
		if n := strings.Count(string(hba), want); n != 1 {
			t.Errorf("variant %s pg_hba.conf has %q %d times, want once:\n%s", v.Name, want, n, hba)
		}
	}
	// The password was never written down: no file of the campaign holds
	// a 48-digit hex string beside PASSWORD or PGPASSWORD.
	filepath.Walk(cfg.OutDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.HasSuffix(p, ".gz") || strings.Contains(p, "/data/") {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "PGPASSWORD=") || strings.Contains(strings.ToUpper(string(b)), "PASSWORD '") {
			t.Errorf("%s holds a password", p)
		}
		return nil
	})
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(h.HostAddr, "5432"), time.Second); err == nil {
		c.Close()
		t.Errorf("a server still listens on %s:5432 after the campaign", h.HostAddr)
	}
	// The directory the killed process left on the client host is gone too.
	if _, err := os.Stat("/tmp/pgbench-client-" + cfg.Key()); !os.IsNotExist(err) {
		t.Errorf("the campaign's directory on the client host is left after it (%v)", err)
	}
}

// TestClientHostTPCC runs a TPC-C campaign with its driver on a client
// host, over the network: the dataset is loaded on the server's host, and
// every warm-up and measured run is the runner's driver, copied to the
// client host and run in its namespace. A variant that must scan tables
// instead of using their indexes is a real slow-down, found on NOPM; the
// driver's CPU use is measured there, and the results name the client.
func TestClientHostTPCC(t *testing.T) {
	bin := needPostgres(t)
	h := testhost.New(t)
	cfg := tpccConfig(bin, scratch(t), Variant{Name: "base"},
		Variant{Name: "seqscan", Settings: map[string]string{"enable_indexscan": "off", "enable_bitmapscan": "off", "enable_indexonlyscan": "off"}})
	cfg.Clients, cfg.Iterations, cfg.Duration = []int{2}, 3, 2*time.Second
	cfg.ClientHost = "root@" + net.JoinHostPort(h.Addr, strconv.Itoa(h.Port))
	cfg.ClientHostKey, cfg.ClientBinDir, cfg.ClientKey = h.HostKeyLine, bin, h.ClientKeyPEM
	// Pinned on the client host, by its numactl.
	testhost.RequireCommand(t, "numactl", "/usr/bin", "/bin")
	cfg.ClientNUMA = "cpunodebind=0,membind=0"
	// The driver on the client host is the copy of this test binary (the
	// test driver): it reaches the server at h.HostAddr.
	w := testhost.WatchProcesses([]string{"pgbench-runner"}, []string{h.HostAddr})
	res, err := Execute(context.Background(), cfg, nil)
	seen := w.Stop()["pgbench-runner"]
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if ns := h.NetnsInode(); seen[ns] == 0 || len(seen) != 1 {
		t.Errorf("the TPC-C driver seen in network namespaces %v; want only in the client host's (%d)", seen, ns)
	}
	if c := res.Client; c == nil || c.Address != h.Addr || c.ServerAddress != h.HostAddr {
		t.Errorf("results' client = %+v, want address %s reaching %s", c, h.Addr, h.HostAddr)
	}
	// A run of the seqscan variant completes a few transactions (25 alone,
	// 2 on a loaded machine), which can all be new orders: TPM is at least
	// NOPM in every run, and above it over the campaign.
	var nopm, tpm float64
	for _, r := range res.Runs {
		if !(r.NOPM > 0 && r.TPM >= r.NOPM) || r.NetworkRTTMS <= 0 || r.Client == nil || r.Client.CPUSeconds <= 0 {
			t.Errorf("run %d: NOPM %g, TPM %g, rtt %v ms, client %+v; want NOPM, TPM at least as high, a round trip and the driver's CPU on the client host",
				r.Seq, r.NOPM, r.TPM, r.NetworkRTTMS, r.Client)
		}
		nopm, tpm = nopm+r.NOPM, tpm+r.TPM
		checkClientHostCounters(t, r)
	}
	if !(tpm > nopm) {
		t.Errorf("the runs' TPM add up to %g, their NOPM to %g: want TPM above NOPM (TPM counts every transaction type)", tpm, nopm)
	}
	cmp := res.Cells[0].Comparisons[0]
	t.Logf("seqscan vs base over the network: %+.1f%% [%s] NOPM, %s", cmp.DeltaPct, ciString(cmp), cmp.Verdict)
	if cmp.Candidate != "seqscan" || cmp.Verdict != report.VerdictSlower {
		t.Errorf("seqscan vs base = %+v, want slower", cmp)
	}
	b, err := os.ReadFile(filepath.Join(cfg.OutDir, res.Runs[0].LogDir, "command"))
	if err != nil || !strings.Contains(string(b), "# on the client host") || !strings.Contains(string(b), "\nnumactl --cpunodebind=0 --membind=0 ") ||
		!strings.Contains(string(b), "--host="+h.HostAddr) || strings.Contains(string(b), "PASSWORD") {
		t.Errorf("run 1's command = %q (%v), want the driver's command on the client host, pinned there, reaching %s, without a password", b, err, h.HostAddr)
	}
	for _, v := range []string{"base", "seqscan"} {
		if d := res.Workload.TPCC.Datasets[v]; d.FinalCheck == nil || !d.FinalCheck.Passed {
			t.Errorf("%s: check after the runs %+v, want its conditions holding", v, d.FinalCheck)
		}
	}
	if _, err := os.Stat("/tmp/pgbench-client-" + cfg.Key()); !os.IsNotExist(err) {
		t.Errorf("the campaign's directory on the client host, with the driver's copy, is left after it (%v)", err)
	}
}

// checkClientHostCounters checks a run with a client host has that host's
// OS counters in their own rows beside the server host's: CPU time and
// context switches, which pgbench's run there made grow.
func checkClientHostCounters(t *testing.T, r report.Run) {
	t.Helper()
	for _, k := range []string{"os.cpu.user_s", "os.context_switches"} {
		if v := r.Counters[ClientHostCounters+k]; v <= 0 {
			t.Errorf("run %d: %s%s = %v, want the client host's counter grown over the run", r.Seq, ClientHostCounters, k, v)
		}
		if _, ok := r.Counters[k]; !ok {
			t.Errorf("run %d: the server host's %s is missing", r.Seq, k)
		}
	}
	if src := report.CounterSource(ClientHostCounters + "os.cpu.user_s"); src == report.CounterSource("os.cpu.user_s") {
		t.Errorf("the client host's counters are listed as %q, as the server host's", src)
	}
}

// TestCutReport: clientRun's report comes off pgbench's stderr whole, its
// times into the result and its OS counters into a clientOS; a report cut
// short (a cancelled run) leaves the counters out.
func TestCutReport(t *testing.T) {
	stat := func(user, ctxt int) string {
		return fmt.Sprintf("cpu  %d 0 50 1000 0 0 0 0 0 0\ncpu0 %d 0 50 1000 0 0 0 0 0 0\nctxt %d\n", user, user, ctxt)
	}
	report := "pgbench: warning: something\n" + timesMarker + "\n0m0.01s 0m0.02s\n0m1.50s 0m0.25s\n" +
		osMarker + "stat0\n" + stat(100, 1000) + osMarker + "vmstat0\npgfault 10\n" +
		osMarker + "stat1\n" + stat(400, 5000) + osMarker + "vmstat1\npgfault 30\n"
	res := remote.Result{Stderr: []byte(report)}
	stderr, s := cutReport(&res)
	if string(stderr) != "pgbench: warning: something\n" || res.UserTime != 1500*time.Millisecond || res.SystemTime != 250*time.Millisecond {
		t.Errorf("stderr %q, user %v, system %v; want pgbench's line alone, 1.5 s and 0.25 s", stderr, res.UserTime, res.SystemTime)
	}
	if s == nil {
		t.Fatal("no OS counters")
	}
	d := s.before.Delta(s.after)
	if d["os.cpu.user_s"] != 3 || d["os.context_switches"] != 4000 || d["os.vmstat.pgfault"] != 20 {
		t.Errorf("delta = %v, want 3 s of user time, 4000 context switches, 20 page faults", d)
	}
	cut := remote.Result{Stderr: []byte(report[:strings.Index(report, osMarker+"stat1")])}
	if _, s := cutReport(&cut); s != nil || cut.UserTime != 1500*time.Millisecond {
		t.Errorf("a report without its after-counters: counters %v, user %v; want none, and the times", s, cut.UserTime)
	}
	none := remote.Result{Stderr: []byte("pgbench: fatal\n")}
	if stderr, s := cutReport(&none); string(stderr) != "pgbench: fatal\n" || s != nil {
		t.Errorf("no report: stderr %q, counters %v; want the stderr as it was", stderr, s)
	}
}

// TestClientHostRefusals: a client bin dir without pgbench is refused
// before anything starts, and a client host that cannot reach the server
// is an error naming both addresses, before any measured run.
func TestClientHostRefusals(t *testing.T) {
	bin := needPostgres(t)
	h := testhost.New(t)

	cfg := clientHostConfig(t, h, bin)
	cfg.ClientBinDir = t.TempDir()
	_, err := Execute(context.Background(), cfg, nil)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Path.Flag != "client-bin-dir" || !strings.Contains(err.Error(), "no pgbench") {
		t.Errorf("client bin dir without pgbench: %v, want a validation error at client-bin-dir", err)
	}
	if _, serr := os.Stat(filepath.Join(cfg.OutDir, "data")); !os.IsNotExist(serr) {
		t.Errorf("a refused campaign made %s/data (%v)", cfg.OutDir, serr)
	}
	if _, serr := os.Stat("/tmp/pgbench-client-" + cfg.Key()); !os.IsNotExist(serr) {
		t.Errorf("a refused campaign left its directory on the client host (%v)", serr)
	}

	// A pinning the client host's numactl refuses (it has no node 7).
	testhost.RequireCommand(t, "numactl", "/usr/bin", "/bin")
	cfg = clientHostConfig(t, h, bin)
	cfg.ClientNUMA = "cpunodebind=7"
	_, err = Execute(context.Background(), cfg, nil)
	var unmet *UnmetError
	if !errors.As(err, &unmet) || !strings.Contains(err.Error(), "cannot pin pgbench") || !strings.Contains(err.Error(), h.Addr) {
		t.Errorf("client pinning on a node the client host lacks: %v, want an unmet requirement naming the client host", err)
	}
	if _, serr := os.Stat(filepath.Join(cfg.OutDir, "data")); !os.IsNotExist(serr) {
		t.Errorf("a refused campaign made %s/data (%v)", cfg.OutDir, serr)
	}

	// The client host's connections to PostgreSQL's port are refused by a
	// routing rule; its SSH still works.
	h.Exec(t, "ip", "rule", "add", "ipproto", "tcp", "dport", "5432", "prohibit")
	cfg = clientHostConfig(t, h, bin)
	var rec recorder
	_, err = Execute(context.Background(), cfg, rec.on)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the server at "+h.HostAddr+":5432") || !strings.Contains(err.Error(), h.Addr) {
		t.Errorf("unreachable server: %v, want an error naming %s and %s:5432", err, h.Addr, h.HostAddr)
	}
	if n := rec.count(EventRunDone); n != 0 {
		t.Errorf("%d runs done before the error, want none", n)
	}
}

// TestCheckClient: the client host's part of a definition is checked with
// the rest, each fault at its flag.
func TestCheckClient(t *testing.T) {
	base := func() *Config {
		c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Scale: 1, Clients: []int{1}, Duration: time.Second, Iterations: 3,
			ClientHost: "root@10.0.0.2:22", ClientHostKey: "SHA256:k", ClientBinDir: "/c/bin"}
		c.Defaults()
		return c
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("a complete client host: %v", err)
	}
	tpccClient := base()
	tpccClient.Mode, tpccClient.Warehouses, tpccClient.Scale, tpccClient.ClientNUMA = ModeTPCC, 1, 0, "cpunodebind=1,membind=1"
	if err := tpccClient.Validate(); err != nil {
		t.Fatalf("a client host with mode tpcc and pinned: %v", err)
	}
	for _, tc := range []struct {
		name, flag, want string
		change           func(*Config)
	}{
		{"bin dir without host", "client-bin-dir", "applies only with", func(c *Config) { c.ClientHost = "" }},
		{"host without bin dir", "client-bin-dir", "needs --client-bin-dir", func(c *Config) { c.ClientBinDir = "" }},
		{"host without host key", "client-host-key", "needs --client-host-key", func(c *Config) { c.ClientHostKey = "" }},
		{"bad port", "client-host", "is not a port number", func(c *Config) { c.ClientHost = "root@h:99999" }},
		{"no host", "client-host", "want [user@]host[:port]", func(c *Config) { c.ClientHost = "root@" }},
		{"client pinning", "client-numa", "unknown numactl option", func(c *Config) { c.ClientNUMA = "cpunode=1" }},
	} {
		c := base()
		tc.change(c)
		errs := ValidationErrors(c.Validate())
		if len(errs) != 1 || errs[0].Path.Flag != tc.flag || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: %v, want one error at --%s saying %q", tc.name, errs, tc.flag, tc.want)
		}
	}
	for _, tc := range []struct{ in, user, host string }{
		{"10.0.0.2", "root", "10.0.0.2"}, {"bench@h:2222", "bench", "h"}, {"[fd00::2]:22", "root", "fd00::2"},
	} {
		if u, h, _, err := ParseClientHost(tc.in); err != nil || u != tc.user || h != tc.host {
			t.Errorf("ParseClientHost(%q) = %q, %q, %v; want %q, %q", tc.in, u, h, err, tc.user, tc.host)
		}
	}
}

// TestClientProbeReadsThisHost runs the probe the runner sends the client
// host on this machine, and reads its answer: this machine's addresses,
// pgbench, kernel, CPUs and memory (more than 2 GiB here, which awk would
// have printed in exponent form).
func TestClientProbeReadsThisHost(t *testing.T) {
	bin := needPostgres(t)
	work := filepath.Join(t.TempDir(), "work")
	cmd := exec.Command("sh", "-c", clientProbe, "sh", bin, work)
	cmd.Env = append(os.Environ(), "SSH_CONNECTION=10.0.0.1 50000 10.0.0.2 22")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	cs := &clientSide{name: "this host", bin: bin}
	if err := cs.readProbe(string(out)); err != nil {
		t.Fatalf("readProbe(%q): %v", out, err)
	}
	mem, err := sysinfo.ParseMeminfo("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	f := cs.facts
	if f.Address != "10.0.0.2" || f.ServerAddress != "10.0.0.1" || !strings.HasPrefix(f.PgbenchVersion, "pgbench (PostgreSQL) ") ||
		f.CPUs != runtime.NumCPU() || f.MemoryBytes != mem["MemTotal"] || f.Kernel == "" || cs.work != work || !slices.Contains(unameArch[runtime.GOARCH], cs.arch) {
		t.Errorf("facts = %+v, work %q, arch %q; want addresses 10.0.0.2 from 10.0.0.1, pgbench's version, %d CPUs, %d bytes, %s and this machine's architecture",
			f, cs.work, cs.arch, runtime.NumCPU(), mem["MemTotal"], work)
	}
	for _, bad := range []string{
		strings.Replace(string(out), strconv.FormatInt(mem["MemTotal"]/1024, 10), "2.52762e+07", 1),
		strings.Replace(string(out), "\n"+strconv.Itoa(runtime.NumCPU())+"\n", "\n\n", 1),
	} {
		if err := (&clientSide{name: "this host", bin: bin}).readProbe(bad); err == nil {
			t.Errorf("readProbe(%q) = nil, want an error for the unreadable figure", bad)
		}
	}
}
