package provider

// Test helpers that more than one test file uses.

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
)

// Terraform and the provider under test.

// reattachProvider serves the provider in this test process and returns the
// TF_REATTACH_PROVIDERS value with which a terraform process uses it, as
// terraform-plugin-testing does; the server stops when the test ends.
func reattachProvider(t *testing.T) string {
	t.Helper()
	// The in-process server would log every RPC at trace level to stderr.
	for _, v := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
		t.Setenv(v, "ERROR")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reattach := make(chan *plugin.ReattachConfig)
	closed := make(chan struct{})
	const addr = "registry.terraform.io/pgbench-tf/pgbench"
	go tf6server.Serve(addr, providerserver.NewProtocol6(New("test")()), tf6server.WithDebug(ctx, reattach, closed))
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(30 * time.Second):
		t.Fatal("provider server did not start")
	}
	env, err := json.Marshal(map[string]any{addr: map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(env)
}

// terraformCmd is terraform args in dir, using the provider that
// reattachProvider serves (reattach is its TF_REATTACH_PROVIDERS value).
func terraformCmd(tf, dir, reattach string, args ...string) *exec.Cmd {
	cmd := exec.Command(tf, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+reattach, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	return cmd
}

// This machine as a test host: the runner, directories, PostgreSQL.

// installRunner installs the embedded runner into a per-test directory
// (the filesystem is shared with every test host) and returns its path.
func installRunner(t *testing.T) string {
	t.Helper()
	in, err := runnerbin.Install(context.Background(), remote.NewLocal(), runnerbin.Binary, reachableTempDir(t))
	if err != nil {
		t.Fatalf("install runner: %v (run make runner first)", err)
	}
	return in.Path
}

// interruptedOnce returns the path of a runner for this machine that runs
// the runner at real, but for the first campaign it is asked to run
// (`ab ... --progress-json`): that one gets SIGINT, as an interrupt on the
// host sends it, once its first run is done. A test stops an apply part
// way so, at the same point however loaded the machine is, where a short
// create timeout would stop it before the first run on a busy machine.
func interruptedOnce(t *testing.T, real string) string {
	t.Helper()
	dir := reachableTempDir(t)
	path := filepath.Join(dir, "pgbench-runner")
	script := fmt.Sprintf(`#!/bin/bash
real=%q marker=%q
if [ "$1" != ab ] || [[ " $* " != *" --progress-json "* ]] || ! mkdir "$marker" 2>/dev/null; then
	exec "$real" "$@"
fi
mkfifo "$marker/stderr"
"$real" "$@" 2>"$marker/stderr" <&0 &
pid=$!
sent=
while IFS= read -r line; do
	printf '%%s\n' "$line" >&2
	if [ -z "$sent" ] && [[ $line == *'"event":"run_done"'* ]]; then
		kill -INT "$pid"
		sent=1
	fi
done <"$marker/stderr"
wait "$pid"
`, real, filepath.Join(dir, "interrupted"))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// reachableTempDir is a t.TempDir() the postgres user can traverse: the
// campaign's data directories live below the runner's directory, and
// initdb runs as postgres, not as root.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// localConnectionHCL is the host_connection of this machine, for a runner
// installRunner installed.
func localConnectionHCL(runner string) string {
	return fmt.Sprintf(`{
    mode        = "local"
    runner_path = %q
  }`, runner)
}

// systemPGBin is the bin directory of Debian's PostgreSQL 15.
const systemPGBin = "/usr/lib/postgresql/15/bin"

// diagPattern is the pattern of a plan-time error: its summary, then its
// detail, which Terraform may wrap at any space.
func diagPattern(summary, detail string) string {
	words := strings.Fields(detail)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return `(?s)` + regexp.QuoteMeta(summary) + `.*` + strings.Join(words, `\s+`)
}

// A simulated EC2 region.

const (
	ec2TestImage = "debian-12-amd64-*"
	ec2TestOwner = "136693071363"
)

// ec2TestRegion starts a simulated region and points the SDK's default
// chain at static test credentials only.
func ec2TestRegion(t *testing.T) *ec2sim.Server {
	t.Helper()
	return ec2TestRegionWith(t, ec2sim.Options{})
}

// ec2TestRegionWith is ec2TestRegion with a region shaped by opts.
func ec2TestRegionWith(t *testing.T, opts ec2sim.Options) *ec2sim.Server {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPGBENCHTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "pgbench-test-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "")
	return ec2sim.New(t, opts)
}

func ec2ProviderBlock(sim *ec2sim.Server) string {
	return fmt.Sprintf(`
provider "pgbench" {
  aws {
    endpoint               = %q
    servicequotas_endpoint = %q
    region                 = "us-east-2"
  }
}
`, sim.URL, sim.URL)
}

// ec2HostConfig is an ec2 host in the simulated region; body goes into the
// ec2 block and extra into the resource.
func ec2HostConfig(sim *ec2sim.Server, dir, body, extra string) string {
	return ec2ProviderBlock(sim) + ec2HostResource(dir, body, extra)
}

// ec2HostResource is the resource of ec2HostConfig, without the provider.
func ec2HostResource(dir, body, extra string) string {
	return fmt.Sprintf(`
resource "pgbench_host" "metal" {
  install_dir = %q
  ec2 {
    instance_type = "r8i.metal-96xl"
    image {
      name   = %q
      owners = [%q]
    }
    ssh_cidrs     = ["10.200.0.0/16"]
    poll_interval = "100ms"
    owner         = "ci"
%s
  }
%s
}
`, dir, ec2TestImage, ec2TestOwner, body, extra)
}

// ec2NoneRunning is a CheckDestroy: every instance the region launched is
// terminated and its test host gone, and the generated key pair and the
// temporary security group are deleted.
func ec2NoneRunning(sim *ec2sim.Server) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, in := range sim.Instances() {
			if in.State != ec2sim.Terminated {
				return fmt.Errorf("instance %s is %s after destroy, want terminated", in.ID, in.State)
			}
			if in.Namespace != "" {
				if _, err := os.Stat(filepath.Join("/run/netns", in.Namespace)); !os.IsNotExist(err) {
					return fmt.Errorf("test host %s of terminated %s still exists (stat: %v)", in.Namespace, in.ID, err)
				}
			}
		}
		if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
			return fmt.Errorf("after destroy key pairs = %v, security groups = %v, want none", k, g)
		}
		return nil
	}
}

// ec2Only checks that the region launched exactly n instances and returns
// them through got.
func ec2Only(sim *ec2sim.Server, n int, got *[]ec2sim.InstanceInfo) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ins := sim.Instances()
		if len(ins) != n {
			return fmt.Errorf("instances launched = %d, want %d", len(ins), n)
		}
		if got != nil {
			*got = ins
		}
		return nil
	}
}

// A campaign's results and its collected report.

// readResults reads and decodes a campaign's results.json.
func readResults(path string) (*report.Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return report.DecodeResults(b, path)
}

// abResultsChecks check the shape and sanity of a finished campaign's
// attributes: one cell per client count in order, every variant in every
// cell with one TPS per iteration and its median within its min-max, one
// comparison per candidate with a verdict from the allowed set. The
// report_dir check records the directory in *dir for the destroy check and
// looks in it for each variant's data directory; more checks the report
// directory may need.
func abResultsChecks(name string, variants []string, clients []int, iterations int, dir *string, more ...func(dir string) error) []statecheck.StateCheck {
	var cells []knownvalue.Check
	for _, c := range clients {
		stats := map[string]knownvalue.Check{}
		for _, v := range variants {
			stats[v] = abVariantStats{iterations: iterations}
		}
		var cmps []knownvalue.Check
		for _, v := range variants[1:] {
			cmps = append(cmps, knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"baseline":  knownvalue.StringExact(variants[0]),
				"candidate": knownvalue.StringExact(v),
				"verdict":   knownvalue.StringRegexp(regexp.MustCompile(`^(faster|slower|no-difference)$`)),
				"p_value": knownvalue.Float64Func(func(p float64) error {
					if p < 0 || p > 1 {
						return fmt.Errorf("p_value = %v, want within [0, 1]", p)
					}
					return nil
				}),
			}))
		}
		cells = append(cells, knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"clients":     knownvalue.Int64Exact(int64(c)),
			"variants":    knownvalue.MapExact(stats),
			"comparisons": knownvalue.ListExact(cmps),
		}))
	}
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(name, tfjsonpath.New("results"), knownvalue.ListExact(cells)),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("summary_markdown"), knownvalue.StringRegexp(regexp.MustCompile(`\|`))),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("wall_seconds"), knownvalue.Float64Func(func(ws float64) error {
			if ws <= 0 {
				return fmt.Errorf("wall_seconds = %v, want > 0", ws)
			}
			return nil
		})),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("report_dir"), knownvalue.StringFunc(func(d string) error {
			*dir = d
			if !strings.HasPrefix(d, "/") {
				return fmt.Errorf("report_dir = %q, want an absolute path", d)
			}
			for _, v := range variants {
				if _, err := os.Stat(filepath.Join(d, "data", v)); err != nil {
					return fmt.Errorf("data directory of %s: %v", v, err)
				}
			}
			for _, check := range more {
				if err := check(d); err != nil {
					return err
				}
			}
			return nil
		})),
	}
}

// abVariantStats checks one variant's statistics in a cell: one TPS per
// iteration, 0 < min <= median <= max, and every TPS within min-max.
type abVariantStats struct{ iterations int }

func (c abVariantStats) String() string {
	return fmt.Sprintf("%d TPS values within 0 < min <= median <= max", c.iterations)
}

func (c abVariantStats) CheckValue(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("variant statistics are %T, want an object", v)
	}
	num := func(x any) (float64, error) {
		n, ok := x.(json.Number)
		if !ok {
			return 0, fmt.Errorf("%v is %T, want a number", x, x)
		}
		return n.Float64()
	}
	var med, lo, hi float64
	for k, dst := range map[string]*float64{"median_tps": &med, "min_tps": &lo, "max_tps": &hi} {
		f, err := num(obj[k])
		if err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		*dst = f
	}
	if !(lo > 0 && lo <= med && med <= hi) {
		return fmt.Errorf("min %v, median %v, max %v: want 0 < min <= median <= max", lo, med, hi)
	}
	tps, ok := obj["tps"].([]any)
	if !ok || len(tps) != c.iterations {
		return fmt.Errorf("tps = %v, want %d values", obj["tps"], c.iterations)
	}
	for j, x := range tps {
		f, err := num(x)
		if err != nil {
			return fmt.Errorf("tps[%d]: %v", j, err)
		}
		if f < lo || f > hi {
			return fmt.Errorf("tps[%d] = %v, outside min-max %v-%v", j, f, lo, hi)
		}
	}
	return nil
}

// abCollectedChecks check a collected report: local_report_dir is want
// (or, with want empty, recorded in *dir), every file of local_files is
// there with its sha256, the report has what the issue lists, the raw logs
// are one archive holding one directory per run, and progress.log has a
// line for each of the progressRuns runs this apply ran or found.
func abCollectedChecks(name string, runs, progressRuns int, want string, dir *string) []statecheck.StateCheck {
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(name, tfjsonpath.New("local_report_dir"), knownvalue.StringFunc(func(d string) error {
			if want != "" && d != want {
				return fmt.Errorf("local_report_dir = %q, want %q", d, want)
			}
			if dir != nil {
				*dir = d
			}
			return abCheckProgressLog(d, progressRuns)
		})),
		statecheck.ExpectKnownValue(name, tfjsonpath.New("local_files"), abLocalFiles{dir: func() string {
			if want != "" {
				return want
			}
			return *dir
		}, runs: runs}),
	}
}

// abLocalFiles checks local_files against the files on disk.
type abLocalFiles struct {
	dir  func() string
	runs int
}

func (c abLocalFiles) String() string { return "the collected files with their sha256" }

func (c abLocalFiles) CheckValue(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("local_files is %T, want a map", v)
	}
	dir := c.dir()
	var names []string
	for n, sum := range m {
		names = append(names, n)
		got, err := digest.FileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		if got != sum {
			return fmt.Errorf("%s has sha256 %s, local_files says %v", n, got, sum)
		}
	}
	for _, n := range []string{"journal.jsonl", "results.json", "results.csv", "summary.md", "chart.svg", "sysinfo.json", "logs.tar.gz"} {
		if !slices.Contains(names, n) {
			return fmt.Errorf("local_files %q lacks %s", names, n)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".txt") }) {
		return fmt.Errorf("local_files %q has no benchstat file", names)
	}
	// A partial download never stays behind.
	if left, _ := filepath.Glob(filepath.Join(dir, ".partial-*")); len(left) > 0 {
		return fmt.Errorf("partial downloads left in %s: %q", dir, left)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var res struct {
		Workload struct {
			Mode string `json:"mode"`
		} `json:"workload"`
		Runs []struct {
			LogDir string `json:"log_dir"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	if len(res.Runs) != c.runs {
		return fmt.Errorf("collected results.json has %d runs, want %d", len(res.Runs), c.runs)
	}
	logs, err := abArchiveNames(filepath.Join(dir, "logs.tar.gz"))
	if err != nil {
		return err
	}
	// A pgbench run keeps its per-transaction log, compressed; a TPC-C
	// run the driver's JSON result.
	kept, what := func(n, dir string) bool {
		return strings.Contains(n, "/"+dir+"/pgbench_log.") && strings.HasSuffix(n, ".gz")
	}, "compressed pgbench log"
	if res.Workload.Mode == "tpcc" {
		kept, what = func(n, dir string) bool { return strings.HasSuffix(n, "/"+dir+"/stdout") }, "TPC-C driver result"
	}
	for _, r := range res.Runs {
		if !slices.ContainsFunc(logs, func(n string) bool { return kept(n, r.LogDir) }) {
			return fmt.Errorf("logs.tar.gz has no %s of %s: %q", what, r.LogDir, logs)
		}
	}
	return nil
}

// abArchiveNames lists the entries of a .tar.gz.
func abArchiveNames(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		names = append(names, h.Name)
	}
}

// abCheckProgressLog checks that dir/progress.log has a time-stamped line
// per measured or journaled run, and the collection's.
func abCheckProgressLog(dir string, runs int) error {
	b, err := os.ReadFile(filepath.Join(dir, progressLogFile))
	if err != nil {
		return err
	}
	line := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ run (\d+)/\d+: .*(tps in .*ETA|in the journal)`)
	seen := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		seen[m[1]] = true
	}
	if len(seen) < runs {
		return fmt.Errorf("progress.log has lines for %d runs, want %d:\n%s", len(seen), runs, b)
	}
	if !strings.Contains(string(b), " collected ") {
		return fmt.Errorf("progress.log does not say the report was collected:\n%s", b)
	}
	return nil
}

// abCheckLocalAlpha checks the collected results.json in dir is at alpha.
func abCheckLocalAlpha(dir string, alpha float64) error {
	res, err := readResults(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	if res.Alpha != alpha {
		return fmt.Errorf("collected results.json alpha = %v, want %v", res.Alpha, alpha)
	}
	return nil
}

// abResultsRootForTest is the default collection root, pgbench-results in
// the working directory, which the in-process provider shares with the
// test; it is removed after the test when the test made it.
func abResultsRootForTest(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(abResultsRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); err == nil {
		t.Fatalf("%s exists already: move it away, the test collects into it", root)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// abUnder checks that a resource's local_report_dir is root/<id>.
func abUnder(name, root string) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(name, tfjsonpath.New("local_report_dir"), knownvalue.StringFunc(func(d string) error {
		if filepath.Dir(d) != root || !regexp.MustCompile(`^[0-9a-f]{8,}$`).MatchString(filepath.Base(d)) {
			return fmt.Errorf("local_report_dir = %q, want %s/<campaign id>", d, root)
		}
		return nil
	}))
}

// abCheckHistory checks that the history beside a collected report has n
// entries, each of the campaign id.
func abCheckHistory(local string, n int) statecheck.StateCheck {
	return statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("id"), knownvalue.StringFunc(func(id string) error {
		f, err := os.Open(filepath.Join(filepath.Dir(local), historyFile))
		if err != nil {
			return err
		}
		defer f.Close()
		entries, err := report.ReadHistory(f)
		if err != nil {
			return err
		}
		if len(entries) != n {
			return fmt.Errorf("history has %d entries, want %d", len(entries), n)
		}
		for _, e := range entries {
			if e.Campaign != id {
				return fmt.Errorf("history entry of campaign %q, want %q", e.Campaign, id)
			}
		}
		return nil
	}))
}
