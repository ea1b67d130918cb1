package observe

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const pgBinDir = "/usr/lib/postgresql/15/bin"

// TestReadOSCountsABusyLoop reads the real /proc around a busy loop: user
// time grows by about the loop's CPU time, and the kinds together account
// for the elapsed time on every CPU.
func TestReadOSCountsABusyLoop(t *testing.T) {
	dir := t.TempDir()
	cfg := OSConfig{ServerCPUs: []int{0}, DataDir: dir}
	a, err := ReadOS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond {
	}
	b, err := ReadOS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start).Seconds()
	d := a.Delta(b)
	t.Logf("%.2f s: user %.2f, system %.2f, idle %.2f, iowait %.2f, steal %.2f, ctxt %.0f, faults %.0f; disk %q", elapsed,
		d["os.cpu.user_s"], d["os.cpu.system_s"], d["os.cpu.idle_s"], d["os.cpu.iowait_s"], d["os.cpu.steal_s"], d["os.context_switches"], d["os.vmstat.pgfault"], b.Device())
	if d["os.cpu.user_s"] < 0.2 {
		t.Errorf("user time grew by %.2f s over a 0.3 s busy loop", d["os.cpu.user_s"])
	}
	sum := 0.0
	for _, k := range []string{"user", "system", "idle", "iowait", "steal"} {
		v, ok := d["os.cpu."+k+"_s"]
		if !ok || v < 0 {
			t.Errorf("os.cpu.%s_s = %v, %v", k, v, ok)
		}
		sum += v
	}
	if want := elapsed * float64(runtime.NumCPU()); math.Abs(sum-want) > 0.1*want+0.05 {
		t.Errorf("CPU time of all kinds %.2f s, want about %.2f (elapsed × CPUs)", sum, want)
	}
	if _, ok := d["os.server_cpu.user_s"]; !ok {
		t.Error("no counters for the server's CPUs")
	}
	if d["os.context_switches"] <= 0 {
		t.Errorf("context switches %v", d["os.context_switches"])
	}
}

// TestReadOSFixture checks the parsing on a fixture tree: the server CPUs'
// lines only, the NUMA nodes' numastat, a partition's diskstats line.
func TestReadOSFixture(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/stat", "cpu  100 10 50 1000 5 1 2 3 0 0\ncpu0 60 0 30 500 5 1 2 3 0 0\ncpu1 40 10 20 500 0 0 0 0 0 0\nintr 1\nctxt 12345\n")
	write("proc/vmstat", "nr_free_pages 1\npgfault 777\npgmajfault 3\nnuma_hit 900\nnuma_miss 4\n")
	write("sys/devices/system/node/node0/numastat", "numa_hit 500\nnuma_miss 1\nnuma_foreign 2\n")
	write("sys/devices/system/node/node1/numastat", "numa_hit 400\nnuma_miss 3\nnuma_foreign 0\n")
	s, err := ReadOS(OSConfig{Root: root, ServerCPUs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	want := Counters{
		"os.cpu.user_s": 1.1, "os.cpu.system_s": 0.53, "os.cpu.idle_s": 10, "os.cpu.iowait_s": 0.05, "os.cpu.steal_s": 0.03,
		"os.server_cpu.user_s": 0.5, "os.server_cpu.system_s": 0.2, "os.server_cpu.steal_s": 0,
		"os.context_switches": 12345, "os.vmstat.pgfault": 777, "os.vmstat.numa_miss": 4,
		"os.node0.numa_hit": 500, "os.node1.numa_miss": 3,
	}
	for k, v := range want {
		if got, ok := s.values[k]; !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	s.readDiskstats("   8       0 sda 10 0 80 5 20 0 160 7 0 0 0\n   8       1 sda1 4 0 32 2 6 0 48 3 0 12 5\n", "sda1")
	if s.Device() != "sda1" || s.values["os.disk.reads"] != 4 || s.values["os.disk.sectors_written"] != 48 || s.values["os.disk.write_ms"] != 3 {
		t.Errorf("diskstats of sda1: device %q, %v", s.Device(), s.values)
	}
}

func TestCountList(t *testing.T) {
	for s, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8,10-11": 7, "": 0} {
		if got := countList(s); got != want {
			t.Errorf("countList(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestCgroupQuota reads the quotas of fixture cgroup trees, v1 and v2,
// the tightest on the way up winning.
func TestCgroupQuota(t *testing.T) {
	old := cgroupRoot
	cgroupRoot = t.TempDir()
	defer func() { cgroupRoot = old }()
	os.MkdirAll(filepath.Join(cgroupRoot, "cpu,cpuacct/ci/job"), 0o755)
	os.WriteFile(filepath.Join(cgroupRoot, "cpu,cpuacct/ci/cpu.cfs_quota_us"), []byte("150000\n"), 0o644)
	os.WriteFile(filepath.Join(cgroupRoot, "cpu,cpuacct/ci/cpu.cfs_period_us"), []byte("100000\n"), 0o644)
	os.WriteFile(filepath.Join(cgroupRoot, "cpu,cpuacct/ci/job/cpu.cfs_quota_us"), []byte("-1\n"), 0o644)
	os.WriteFile(filepath.Join(cgroupRoot, "cpu,cpuacct/ci/job/cpu.cfs_period_us"), []byte("100000\n"), 0o644)
	if got := cgroupQuota("4:memory:/x\n3:cpu,cpuacct:/ci/job\n"); got != 1.5 {
		t.Errorf("v1 quota = %v, want 1.5 (the parent's)", got)
	}
	os.MkdirAll(filepath.Join(cgroupRoot, "svc"), 0o755)
	os.WriteFile(filepath.Join(cgroupRoot, "svc/cpu.max"), []byte("50000 100000\n"), 0o644)
	if got := cgroupQuota("0::/svc\n"); got != 0.5 {
		t.Errorf("v2 quota = %v, want 0.5", got)
	}
	if got := cgroupQuota("0::/\n"); !math.IsInf(got, 1) {
		t.Errorf("quota without limits = %v, want +Inf", got)
	}
}

// TestProcessLimitOfThisProcess reads the real allowance of the test
// process: its affinity is every CPU it can run on.
func TestProcessLimitOfThisProcess(t *testing.T) {
	cpus, quota, err := ProcessLimit(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this process may use %d CPUs, quota %v", cpus, quota)
	if cpus < 1 || cpus > runtime.NumCPU()*2 || quota <= 0 {
		t.Errorf("ProcessLimit = %d CPUs, quota %v", cpus, quota)
	}
}

func TestShare(t *testing.T) {
	u := ClientUsage{CPUSeconds: 9, WallSeconds: 10, Threads: 2, AllowedCPUs: 1}
	if s := u.Share(); s != 0.9 {
		t.Errorf("Share = %v, want 0.9", s)
	}
	if s := (ClientUsage{CPUSeconds: 1}).Share(); s != 0 {
		t.Errorf("Share without wall time = %v, want 0", s)
	}
}

func TestPGQueryPerVersion(t *testing.T) {
	q15, q16, q17 := pgQuery(15), pgQuery(16), pgQuery(17)
	if strings.Contains(q15, "pg_stat_io") || strings.Contains(q15, "pg_stat_checkpointer") || !strings.Contains(q15, "buffers_backend") {
		t.Errorf("PostgreSQL 15 query reads views it lacks or misses buffers_backend: %s", q15)
	}
	if !strings.Contains(q16, "pg_stat_io") || strings.Contains(q16, "pg_stat_checkpointer") {
		t.Errorf("PostgreSQL 16 query: %s", q16)
	}
	if !strings.Contains(q17, "num_timed::float8 FROM pg_stat_checkpointer") || strings.Contains(q17, "checkpoints_timed::float8 FROM pg_stat_bgwriter") || strings.Contains(q17, "buffers_backend") {
		t.Errorf("PostgreSQL 17 query: %s", q17)
	}
}

// scratchServer starts a throwaway PostgreSQL 15, stopped at the end.
func scratchServer(t *testing.T) *pgctl.Cluster {
	t.Helper()
	testhost.RequireCommand(t, "postgres", pgBinDir)
	testhost.RequireRoot(t)
	ctx := context.Background()
	c, cleanup, err := pgctl.Scratch(ctx, pgBinDir, map[string]string{"shared_buffers": "32MB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return c
}

// TestReadPG counts what a session did: its commits and the rows it
// inserted, as pg_stat_database has them once the session has left.
func TestReadPG(t *testing.T) {
	c := scratchServer(t)
	ctx := context.Background()
	a, err := ReadPG(ctx, c.Psql, 15)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Psql(ctx, "CREATE TABLE t AS SELECT i FROM generate_series(1, 5000) i"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Psql(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the sessions' exits flush their statistics
	b, err := ReadPG(ctx, c.Psql, 15)
	if err != nil {
		t.Fatal(err)
	}
	d := a.Delta(b)
	t.Logf("delta: %v", d)
	if d["pg.tup_inserted"] < 5000 || d["pg.xact_commit"] < 2 || d["pg.checkpoints_req"] < 1 || d["pg.checkpoints"] != d["pg.checkpoints_req"]+d["pg.checkpoints_timed"] {
		t.Errorf("after inserting 5000 rows and a CHECKPOINT: tup_inserted %v, xact_commit %v, checkpoints_req %v, checkpoints %v",
			d["pg.tup_inserted"], d["pg.xact_commit"], d["pg.checkpoints_req"], d["pg.checkpoints"])
	}
}

// TestSampler samples four sessions asleep in pg_sleep, then four busy in
// a query: the first must show as Timeout:PgSleep, the second as CPU.
func TestSampler(t *testing.T) {
	c := scratchServer(t)
	ctx := context.Background()
	start := func(ctx context.Context, stdin io.Reader, onLine func(string)) error {
		args := c.PsqlArgs("")
		cmd := c.Command(nil, "psql", args[:len(args)-2]...)
		cmd.Stdin, cmd.OnStdout = stdin, onLine
		_, err := c.Run(ctx, cmd)
		return err
	}
	sample := func(sql string) Counters {
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); c.Psql(ctx, sql) }()
		}
		time.Sleep(300 * time.Millisecond)
		s, err := StartSampler(ctx, SamplerConfig{Interval: 50 * time.Millisecond, Start: start})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		got, err := s.Stop()
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		return got
	}
	sleeping := sample("SELECT pg_sleep(2)")
	t.Logf("sleeping: %v", sleeping)
	if sleeping["wait.Timeout:PgSleep"] < 0.8 || sleeping["wait.ticks"] < 10 || sleeping["wait.samples"] < 30 {
		t.Errorf("4 sessions in pg_sleep for 1 s sampled every 50 ms: %v", sleeping)
	}
	// generate_series in the target list streams its rows (ProjectSet):
	// in FROM it would fill a tuplestore that spills to a temporary file,
	// and on a slow disk the sessions then wait on BufFileWrite, not CPU.
	busy := sample("SELECT count(*) FROM (SELECT generate_series(1, 80000000)) s")
	t.Logf("busy: %v", busy)
	if busy["wait.CPU"] < 0.5 {
		t.Errorf("4 sessions counting: CPU share %v", busy["wait.CPU"])
	}
}
