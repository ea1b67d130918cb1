package campaign

// Test helpers that more than one test file uses.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/tpcc"
)

func TestMain(m *testing.M) {
	if os.Getenv(tpccDriverEnv) == "1" {
		os.Exit(tpccDriver(os.Args[1:]))
	}
	if path := os.Getenv(childEnv); path != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			var cfg Config
			if err = json.Unmarshal(b, &cfg); err == nil {
				cfg.TPCCDriver = testDriver()
				_, err = Execute(context.Background(), &cfg, nil)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	datasets.removeAll()
	os.Exit(code)
}

// childEnv makes the test binary run one campaign from a JSON Config and
// exit, so a test can kill -9 a real campaign process mid-run.
const childEnv = "PGBENCH_CAMPAIGN_CHILD"

// tpccDriverEnv makes the test binary act as `pgbench-runner tpcc`, the
// TPC-C driver a campaign of mode tpcc runs (see testDriver).
const tpccDriverEnv = "PGBENCH_TPCC_DRIVER_CHILD"

// testDriver is the Config.TPCCDriver of tests: this binary, as the driver.
func testDriver() []string {
	exe, _ := os.Executable()
	return []string{"env", tpccDriverEnv + "=1", exe}
}

// tpccDriver is `pgbench-runner tpcc ... --json` in the test binary.
func tpccDriver(args []string) int {
	args = slices.DeleteFunc(args, func(a string) bool { return a == "--json" })
	action, o, err := tpcc.Parse(args)
	if err == nil {
		var res any
		if res, err = tpcc.Do(context.Background(), action, o, nil); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(res)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// killMidCampaign runs cfg in a child process, kills it with SIGKILL
// while the run after the first `after` journaled ones is in flight, and
// returns how many runs the journal holds; it fails unless that is at
// least after and fewer than total.
func killMidCampaign(t *testing.T, cfg *Config, after, total int) int {
	t.Helper()
	out := cfg.OutDir
	b, _ := json.Marshal(cfg)
	cfg.Defaults()
	cfgFile := filepath.Join(filepath.Dir(out), "config.json")
	if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+cfgFile)
	var childErr bytes.Buffer
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for journalRuns(t, out) < after {
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatalf("child never journaled %d runs: %s", after, childErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Mid-run: the next run is in flight.
	time.Sleep(800 * time.Millisecond)
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	n := journalRuns(t, out)
	if n < after || n >= total {
		t.Fatalf("journal has %d runs after the kill, want %d..%d", n, after, total-1)
	}
	return n
}

func journalRuns(t *testing.T, out string) int {
	b, _ := os.ReadFile(filepath.Join(out, JournalFile))
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"run":`) {
			n++
		}
	}
	return n
}

const pgBinDir = "/usr/lib/postgresql/15/bin"

// needPostgres skips unless PostgreSQL 15 and pgbench are installed.
func needPostgres(t testing.TB) string {
	t.Helper()
	testhost.SkipShort(t, "PostgreSQL servers")
	testhost.RequireCommand(t, "pgbench", pgBinDir)
	testhost.RequireCommand(t, "postgres", pgBinDir)
	if os.Geteuid() != 0 {
		// As root every command runs as user postgres; as anyone else the
		// caller must own the directories, which t.TempDir gives.
		testhost.RequireRoot(t)
	}
	return pgBinDir
}

// scratch is a campaign directory the PostgreSQL user can traverse; its
// servers are stopped and its data removed at the end.
func scratch(t *testing.T) string { return benchScratch(t) }

func benchScratch(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "campaign-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() {
		RemoveData(context.Background(), filepath.Join(dir, "out"), "")
		os.RemoveAll(dir)
	})
	return filepath.Join(dir, "out")
}

// fakeBinDir is a bin directory with the executables Validate looks for.
func fakeBinDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"postgres", "pgbench", "initdb", "pg_ctl", "psql"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Event == kind {
			n++
		}
	}
	return n
}

func checkOrder(t *testing.T, cfg *Config, runs []report.Run) {
	t.Helper()
	plan := cfg.Plan()
	if len(runs) != len(plan) {
		t.Fatalf("len(runs) = %d, want %d", len(runs), len(plan))
	}
	for i, st := range plan {
		r := runs[i]
		if r.Seq != st.Seq || r.Variant != st.Variant || r.Clients != st.Clients || r.Iteration != st.Iteration {
			t.Errorf("runs[%d] = seq %d %s c%d i%d, want seq %d %s c%d i%d", i, r.Seq, r.Variant, r.Clients, r.Iteration, st.Seq, st.Variant, st.Clients, st.Iteration)
		}
		if i > 0 && r.StartedAt.Before(runs[i-1].StartedAt) {
			t.Errorf("run %d started before run %d", r.Seq, runs[i-1].Seq)
		}
	}
}

func planString(steps []Step) string {
	var b strings.Builder
	for _, s := range steps {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Variant)
	}
	return b.String()
}

// readResults reads and decodes a campaign's results.json.
func readResults(path string) (*report.Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return report.DecodeResults(b, path)
}

func median(x []float64) float64 { return quantile(x, 0.5) }

// quantile interpolates linearly between the order statistics of x.
func quantile(x []float64, q float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// datasets are the loaded pgbench datasets of this test binary, one per
// bin directory and scale, each loaded once by a campaign of its own.
var datasets = &datasetCache{dirs: map[string]string{}}

type datasetCache struct {
	mu   sync.Mutex
	root string
	dirs map[string]string
}

func (d *datasetCache) removeAll() {
	if d.root != "" {
		RemoveData(context.Background(), filepath.Join(d.root, "out"), "")
		os.RemoveAll(d.root)
	}
}

// seedData gives the campaign cfg, for each variant named, the loaded and
// stamped pgbench dataset of its bin directory at cfg.Scale in its data
// directory, copied from the one this test binary loaded: the campaign
// reuses it as it reuses the dataset an earlier campaign left, with no
// initdb and no load. Tests of loading and cloning themselves leave the
// variants they are about out.
func seedData(t *testing.T, cfg *Config, variants ...string) {
	t.Helper()
	root := cfg.DataDir
	if root == "" {
		root = filepath.Join(cfg.OutDir, "data")
	}
	if err := mkdirReachable(root); err != nil {
		t.Fatal(err)
	}
	for _, name := range variants {
		i := slices.IndexFunc(cfg.Variants, func(v Variant) bool { return v.Name == name })
		if i < 0 {
			t.Fatalf("seedData: no variant %q", name)
		}
		src := datasets.get(t, cfg.Variants[i].BinDir, cfg.Scale)
		if err := copyDir(context.Background(), src, filepath.Join(root, name)); err != nil {
			t.Fatalf("seed %s: %v", name, err)
		}
		st, err := readStamp(stampPath(filepath.Dir(src), filepath.Base(src)))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeStamp(stampPath(root, name), st); err != nil {
			t.Fatal(err)
		}
	}
}

// get is the data directory of the dataset of bin at scale, loaded by a
// one-run campaign the first time a test asks for it.
func (d *datasetCache) get(t *testing.T, bin string, scale int) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	key := fmt.Sprintf("%s@%d", bin, scale)
	if dir, ok := d.dirs[key]; ok {
		return dir
	}
	if d.root == "" {
		root, err := os.MkdirTemp("", "campaign-datasets-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		d.root = root
	}
	name := fmt.Sprintf("d%d", len(d.dirs))
	cfg := &Config{
		Variants: []Variant{{Name: name, BinDir: bin, HugePages: "off"}, {Name: name + "-unused", BinDir: bin, HugePages: "off"}},
		Mode:     "select-only", Scale: scale, Clients: []int{1}, Duration: time.Second, Iterations: 1, Clone: true,
		OutDir: filepath.Join(d.root, "out"), DataDir: filepath.Join(d.root, "data"), Fresh: true,
	}
	if _, err := Execute(context.Background(), cfg, nil); err != nil {
		t.Fatalf("load the shared dataset of %s at scale %d: %v", bin, scale, err)
	}
	d.dirs[key] = filepath.Join(cfg.DataDir, name)
	return d.dirs[key]
}
