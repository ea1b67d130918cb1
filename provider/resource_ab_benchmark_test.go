package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerbin"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

var updateAB = flag.Bool("update-ab", false, "rewrite the pgbench_ab_benchmark golden files in testdata/")

// abTestConfig is a pgbench_ab_benchmark with a literal local connection,
// for plan-time tests that never reach a host.
func abTestConfig(variants, workload string) string {
	return `
resource "pgbench_ab_benchmark" "t" {
  host_connection = {
    mode        = "local"
    runner_path = "/nonexistent/pgbench-runner"
  }
` + variants + `
` + workload + `
}
`
}

const (
	abTwoVariants = `
  variant {
    name    = "small"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }
  variant {
    name    = "big"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`
	abWorkload = `
  workload {
    clients = [1, 2]
  }`
)

func TestABBenchmarkValidation(t *testing.T) {
	cases := []struct {
		name     string
		variants string
		workload string
		want     string
	}{
		{"no variants", "", abWorkload, `(?s)No Variants.*at least two variant blocks`},
		{"one variant", `
  variant {
    name    = "only"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, abWorkload, `(?s)Only One Variant.*found one \(only\)`},
		{"duplicate names", `
  variant {
    name    = "a"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }
  variant {
    name    = "a"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, abWorkload, `(?s)Duplicate Variant Name.*"a" is used by variant 0 and variant 1`},
		{"bad variant name", `
  variant {
    name    = "has space"
    bin_dir = "/x"
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, `(?s)Invalid Variant Name.*"has space"`},
		{"huge_pages not on/off/try", `
  variant {
    name       = "a"
    bin_dir    = "/x"
    huge_pages = "yes"
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, `(?s)Invalid Huge Pages Setting.*"yes"; want on, off or try`},
		{"huge_pages in settings", `
  variant {
    name     = "a"
    bin_dir  = "/x"
    settings = { huge_pages = "on" }
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, `Huge Pages In Settings`},
		{"setting with a comma", `
  variant {
    name     = "a"
    bin_dir  = "/x"
    settings = { search_path = "a,b" }
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, `(?s)Invalid Variant Setting.*search_path`},
		{"no workload", abTwoVariants, "", `(?s)Missing Workload.*workload block is required`},
		{"empty clients", abTwoVariants, `
  workload {
    clients = []
  }`, `(?s)No Client Counts.*clients is empty`},
		{"missing clients", abTwoVariants, `
  workload {
    mode = "tpcb"
  }`, `No Client Counts`},
		{"zero clients", abTwoVariants, `
  workload {
    clients = [1, 0]
  }`, `(?s)Invalid Client Count.*clients\[1\] is 0`},
		{"negative clients", abTwoVariants, `
  workload {
    clients = [-4]
  }`, `(?s)Invalid Client Count.*clients\[0\] is -4`},
		{"iterations 0", abTwoVariants, `
  workload {
    clients    = [1]
    iterations = 0
  }`, `(?s)Invalid Iterations.*iterations is 0`},
		{"unknown mode", abTwoVariants, `
  workload {
    clients = [1]
    mode    = "read-write"
  }`, `(?s)Unknown Workload Mode.*"read-write"; want select-only, tpcb, simple-update or custom`},
		{"custom without script", abTwoVariants, `
  workload {
    clients = [1]
    mode    = "custom"
  }`, `Missing Script`},
		{"unparsable duration", abTwoVariants, `
  workload {
    clients  = [1]
    duration = "one minute"
  }`, `(?s)Invalid Duration.*duration is "one minute", which is not a duration`},
		{"zero duration", abTwoVariants, `
  workload {
    clients  = [1]
    duration = "0s"
  }`, `(?s)Invalid Duration.*it must be more than zero`},
		{"fractional duration", abTwoVariants, `
  workload {
    clients  = [1]
    duration = "1500ms"
  }`, `(?s)Invalid Duration.*whole seconds`},
		{"unparsable warmup", abTwoVariants, `
  workload {
    clients = [1]
    warmup  = "10"
  }`, `(?s)Invalid Duration.*warmup is "10"`},
		{"bad threads", abTwoVariants, `
  workload {
    clients = [1]
    threads = "many"
  }`, `(?s)Invalid Threads.*"many"`},
		{"bad protocol", abTwoVariants, `
  workload {
    clients  = [1]
    protocol = "binary"
  }`, `value must be one of`},
		{"duplicate client counts", abTwoVariants, `
  workload {
    clients = [1, 16, 1]
  }`, `(?s)Duplicate Client Count.*clients\[0\] and clients\[2\] are both 1`},
		{"script without custom mode", abTwoVariants, `
  workload {
    clients = [1]
    mode    = "tpcb"
    script  = "/tmp/x.sql"
  }`, `(?s)Script Without Custom Mode.*mode is "tpcb"`},
		{"bad server numa", abTwoVariants + `
  server_numa = "cpunodebind"`, abWorkload, `(?s)Invalid NUMA Pinning.*server_numa is "cpunodebind"`},
		{"seed without randomized order", abTwoVariants + `
  seed = 7`, abWorkload, `(?s)Seed Without Randomized Order`},
		{"bin dir with a comma", `
  variant {
    name    = "a"
    bin_dir = "/opt/pg,huge_pages=on"
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, `(?s)Invalid Bin Dir.*"/opt/pg,huge_pages=on"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tfresource.UnitTest(t, tfresource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []tfresource.TestStep{{
					Config:      abTestConfig(tc.variants, tc.workload),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// TestABBenchmarkValidationAccepts checks that a complete, valid
// configuration plans (and so that the cases above fail for their reason).
func TestABBenchmarkValidationAccepts(t *testing.T) {
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []tfresource.TestStep{{
			Config: abTestConfig(abTwoVariants, `
  workload {
    mode       = "select-only"
    clients    = [1, 2]
    duration   = "3s"
    warmup     = "1s"
    iterations = 2
    threads    = "auto"
    protocol   = "prepared"
    restart    = "never"
  }`),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
}

func mustMap(t *testing.T, m map[string]string) types.Map {
	t.Helper()
	v, d := types.MapValueFrom(context.Background(), types.StringType, m)
	if d.HasError() {
		t.Fatal(d)
	}
	return v
}

func abTestModel(t *testing.T, order string, seed *int64) *abBenchmarkModel {
	t.Helper()
	ctx := context.Background()
	vs := []abVariantModel{
		{Name: types.StringValue("small"), BinDir: types.StringValue("/usr/lib/postgresql/15/bin"),
			Settings: mustMap(t, map[string]string{"shared_buffers": "16MB", "effective_cache_size": "64MB"}), HugePages: types.StringValue("off")},
		{Name: types.StringValue("big"), BinDir: types.StringValue("/opt/pg/bin"),
			Settings: types.MapNull(types.StringType), HugePages: types.StringNull()},
	}
	vl, d := types.ListValueFrom(ctx, types.ObjectType{AttrTypes: abVariantAttrTypes}, vs)
	if d.HasError() {
		t.Fatal(d)
	}
	clients, _ := types.ListValueFrom(ctx, types.Int64Type, []int64{1, 16})
	m := &abBenchmarkModel{
		Variants: vl,
		Settings: mustMap(t, map[string]string{"max_connections": "200", "fsync": "off"}),
		Workload: &abWorkloadModel{
			Mode: types.StringValue("tpcb"), Script: types.StringNull(), Scale: types.Int64Value(5), Clients: clients,
			Duration: types.StringValue("3s"), Iterations: types.Int64Value(2), Threads: types.StringNull(),
			Protocol: types.StringNull(), Warmup: types.StringValue("1s"), CheckpointBefore: types.BoolValue(true),
			Restart: types.StringNull(),
		},
		ServerNUMA: types.StringValue("cpunodebind=0"), ClientNUMA: types.StringNull(),
		Order: types.StringNull(), Seed: types.Int64Null(), Alpha: types.Float64Value(0.01),
	}
	if order != "" {
		m.Order = types.StringValue(order)
	}
	if seed != nil {
		m.Seed = types.Int64Value(*seed)
	}
	return m
}

func TestABBenchmarkArgs(t *testing.T) {
	ctx := context.Background()
	got, err := abArgs(ctx, abTestModel(t, "", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--variant", "name=small,bin=/usr/lib/postgresql/15/bin,set=effective_cache_size=64MB;shared_buffers=16MB,huge_pages=off",
		"--variant", "name=big,bin=/opt/pg/bin",
		"--set", "fsync=off", "--set", "max_connections=200",
		"--mode", "tpcb", "--scale", "5", "--clients", "1,16", "--duration", "3s", "--iterations", "2",
		"--warmup", "1s", "--checkpoint-before", "--server-numa", "cpunodebind=0", "--alpha", "0.01",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("abArgs =\n%q\nwant\n%q", got, want)
	}

	// The same configuration gives the same campaign directory (resume);
	// a different one does not.
	again, _ := abArgs(ctx, abTestModel(t, "", nil))
	if a, b := abCampaignKey(got), abCampaignKey(again); a != b {
		t.Fatalf("campaign key of the same config = %s and %s, want equal", a, b)
	}
	rnd, _ := abArgs(ctx, abTestModel(t, "randomized", nil))
	if abCampaignKey(rnd) == abCampaignKey(got) {
		t.Fatalf("campaign key did not change with order")
	}
	if dir, want := abCampaignDir("/tmp/x/pgbench-runner", "0123456789abcdef"), "/tmp/x/campaigns/0123456789abcdef"; dir != want {
		t.Fatalf("abCampaignDir = %s, want %s", dir, want)
	}

	// randomized without a seed: a seed derived from the definition, the
	// same each time, so a retried apply resumes the same order.
	rnd2, _ := abArgs(ctx, abTestModel(t, "randomized", nil))
	if s1, s2 := flagValue(rnd, "--seed"), flagValue(rnd2, "--seed"); s1 == "" || s1 != s2 {
		t.Fatalf("derived seeds = %q and %q, want equal and set", s1, s2)
	}
	seed := int64(42)
	withSeed, _ := abArgs(ctx, abTestModel(t, "randomized", &seed))
	if s := flagValue(withSeed, "--seed"); s != "42" {
		t.Fatalf("--seed = %q, want 42", s)
	}
	if s := flagValue(got, "--seed"); s != "" {
		t.Fatalf("--seed with order alternate = %q, want none", s)
	}
}

func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func TestABBenchmarkResults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "ab_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if err := checkResults(&res); err != nil {
		t.Fatal(err)
	}
	var m abBenchmarkModel
	if d := m.setResults(context.Background(), &res); d.HasError() {
		t.Fatal(d)
	}

	var cells []abCellModel
	if d := m.Results.ElementsAs(context.Background(), &cells, false); d.HasError() {
		t.Fatal(d)
	}
	if got, want := len(cells), len(res.Cells); got != want {
		t.Fatalf("cells = %d, want %d", got, want)
	}
	for i, c := range cells {
		rc := res.Cells[i]
		if got, want := c.Clients, int64(rc.Clients); got != want {
			t.Fatalf("cell %d clients = %d, want %d", i, got, want)
		}
		for name, v := range rc.Variants {
			got := c.Variants[name]
			if got.MedianTPS != v.MedianTPS || got.MinTPS != v.MinTPS || got.MaxTPS != v.MaxTPS || got.LatencyP99MS != v.LatencyMS.P99 || len(got.TPS) != len(v.TPS) {
				t.Fatalf("cell %d variant %s = %+v, want from %+v", i, name, got, v)
			}
		}
		if got, want := len(c.Comparisons), len(rc.Comparisons); got != want {
			t.Fatalf("cell %d comparisons = %d, want %d", i, got, want)
		}
		for j, cmp := range c.Comparisons {
			want := rc.Comparisons[j]
			if cmp.Verdict != want.Verdict || cmp.DeltaPct != want.DeltaPct || cmp.PValue != want.PValue {
				t.Fatalf("cell %d comparison %d = %+v, want %+v", i, j, cmp, want)
			}
			if want.CILowPct == nil != cmp.CILowPct.IsNull() {
				t.Fatalf("cell %d comparison %d ci_low null = %v, want %v", i, j, cmp.CILowPct.IsNull(), want.CILowPct == nil)
			}
		}
	}
	if got, want := m.StartedAt.ValueString(), "2026-11-30T09:00:00Z"; got != want {
		t.Fatalf("started_at = %s, want %s", got, want)
	}
	if got, want := m.WallSeconds.ValueFloat64(), 1440.0; got != want {
		t.Fatalf("wall_seconds = %v, want %v", got, want)
	}
	if got := m.HugePagesObserved.Elements()["stock"]; got.String() != `"off"` {
		t.Fatalf("huge_pages_observed[stock] = %s, want \"off\"", got)
	}
	var si map[string]any
	if err := json.Unmarshal([]byte(m.Sysinfo.ValueString()), &si); err != nil {
		t.Fatalf("sysinfo is not JSON: %v", err)
	}

	// The whole typed value, as Terraform will store it.
	golden := filepath.Join("testdata", "ab_results.tfvalue.golden")
	got := []byte(m.Results.String() + "\n")
	if *updateAB {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-ab to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("results value differs from %s (rerun with -update-ab if intended):\ngot  %.400s\nwant %.400s", golden, got, want)
	}
}

func TestABBenchmarkResultsRefusesOtherSchema(t *testing.T) {
	res := report.Results{SchemaVersion: report.SchemaVersion + 1, Cells: []report.Cell{{Clients: 1}}}
	err := checkResults(&res)
	if err == nil || !strings.Contains(err.Error(), "schema_version") {
		t.Fatalf("checkResults(schema %d) = %v, want a schema_version error", res.SchemaVersion, err)
	}
}

func TestABBenchmarkProgress(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	p := &abProgress{ctx: ctx}
	for _, l := range []string{
		`{"event":"phase","message":"initdb small"}`,
		`{"event":"run_start","seq":1,"total":4,"variant":"small","clients":1,"iteration":1}`,
		`{"event":"run_done","seq":1,"total":4,"variant":"small","clients":1,"iteration":1,"tps":1234.5,"seconds":3.01,"elapsed_seconds":12,"eta_seconds":9.4}`,
		`{"event":"warning","message":"client and server share CPUs"}`,
		`not json at all`,
		`{"event":"done","wall_seconds":25}`,
	} {
		p.line(l)
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		msgs = append(msgs, e["@level"].(string)+" "+e["@message"].(string))
	}
	want := []string{
		"info campaign: initdb small",
		"debug run 1/4 started: small, 1 clients, iteration 1",
		"info run 1/4: small, 1 clients, iteration 1: 1234.5 tps in 3.0s, elapsed 12s, ETA 9s",
		"warn campaign warning: client and server share CPUs",
		"debug pgbench-runner: not json at all",
		"info campaign done in 25s",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log =\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if got, want := p.warnings, []string{"client and server share CPUs"}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("warnings = %q, want %q", got, want)
	}
}

const abPGBin = "/usr/lib/postgresql/15/bin"

// abInstallRunner installs the embedded runner into a per-test directory
// (the filesystem is shared with every test host) and returns its path.
func abInstallRunner(t *testing.T) string {
	t.Helper()
	in, err := runnerbin.Install(context.Background(), remote.NewLocal(), runnerbin.Binary, abTempDir(t))
	if err != nil {
		t.Fatalf("install runner: %v (run make runner first)", err)
	}
	return in.Path
}

// abTempDir is a t.TempDir() the postgres user can traverse: the campaign's
// data directories live below the runner's directory, and initdb runs as
// postgres, not as root.
func abTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// abCheckResults checks the shape and sanity of a finished campaign's
// attributes: one cell per client count in order, every variant in every
// cell with one TPS per iteration and its median within its min-max, one
// comparison per candidate with a verdict from the allowed set. It records
// report_dir in *dir for the destroy check.
func abCheckResults(name string, variants []string, clients []int, iterations int, dir *string) tfresource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[name]
		if !ok {
			return fmt.Errorf("%s not in state", name)
		}
		a := rs.Primary.Attributes
		*dir = a["report_dir"]
		if *dir == "" || !strings.HasPrefix(a["report_dir"], "/") {
			return fmt.Errorf("report_dir = %q, want an absolute path", a["report_dir"])
		}
		if got, want := a["results.#"], strconv.Itoa(len(clients)); got != want {
			return fmt.Errorf("results.# = %s, want %s", got, want)
		}
		num := func(k string) (float64, error) {
			v, err := strconv.ParseFloat(a[k], 64)
			if err != nil {
				return 0, fmt.Errorf("%s = %q: %v", k, a[k], err)
			}
			return v, nil
		}
		for i, c := range clients {
			p := fmt.Sprintf("results.%d.", i)
			if got, want := a[p+"clients"], strconv.Itoa(c); got != want {
				return fmt.Errorf("%sclients = %s, want %s", p, got, want)
			}
			if got, want := a[p+"variants.%"], strconv.Itoa(len(variants)); got != want {
				return fmt.Errorf("%svariants.%% = %s, want %s", p, got, want)
			}
			for _, v := range variants {
				vp := p + "variants." + v + "."
				if got, want := a[vp+"tps.#"], strconv.Itoa(iterations); got != want {
					return fmt.Errorf("%stps.# = %s, want %s", vp, got, want)
				}
				med, err := num(vp + "median_tps")
				if err != nil {
					return err
				}
				lo, err := num(vp + "min_tps")
				if err != nil {
					return err
				}
				hi, err := num(vp + "max_tps")
				if err != nil {
					return err
				}
				if !(lo > 0 && lo <= med && med <= hi) {
					return fmt.Errorf("%s: min %v, median %v, max %v: want 0 < min <= median <= max", vp, lo, med, hi)
				}
				for j := 0; j < iterations; j++ {
					tps, err := num(fmt.Sprintf("%stps.%d", vp, j))
					if err != nil {
						return err
					}
					if tps < lo || tps > hi {
						return fmt.Errorf("%stps.%d = %v, outside min-max %v-%v", vp, j, tps, lo, hi)
					}
				}
			}
			if got, want := a[p+"comparisons.#"], strconv.Itoa(len(variants)-1); got != want {
				return fmt.Errorf("%scomparisons.# = %s, want %s (one per candidate)", p, got, want)
			}
			for j := 1; j < len(variants); j++ {
				cp := fmt.Sprintf("%scomparisons.%d.", p, j-1)
				if got, want := a[cp+"baseline"], variants[0]; got != want {
					return fmt.Errorf("%sbaseline = %s, want %s", cp, got, want)
				}
				if got, want := a[cp+"candidate"], variants[j]; got != want {
					return fmt.Errorf("%scandidate = %s, want %s", cp, got, want)
				}
				switch v := a[cp+"verdict"]; v {
				case "faster", "slower", "no-difference":
				default:
					return fmt.Errorf("%sverdict = %q, want faster, slower or no-difference", cp, v)
				}
				pv, err := num(cp + "p_value")
				if err != nil {
					return err
				}
				if pv < 0 || pv > 1 {
					return fmt.Errorf("%sp_value = %v, want within [0, 1]", cp, pv)
				}
			}
		}
		if !strings.Contains(a["summary_markdown"], "|") {
			return fmt.Errorf("summary_markdown has no table: %.200q", a["summary_markdown"])
		}
		if ws, err := num("wall_seconds"); err != nil || ws <= 0 {
			return fmt.Errorf("wall_seconds = %q, want > 0", a["wall_seconds"])
		}
		for _, v := range variants {
			if _, err := os.Stat(filepath.Join(*dir, "data", v)); err != nil {
				return fmt.Errorf("data directory of %s: %v", v, err)
			}
		}
		return nil
	}
}

// abCheckDataRemoved checks that destroy removed the data directories and
// kept the reports, moved aside so the same configuration measures again.
func abCheckDataRemoved(dir *string, variants []string) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		if *dir == "" {
			return fmt.Errorf("report_dir was never recorded")
		}
		if _, err := os.Stat(*dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("campaign directory %s after destroy: %v, want it moved aside", *dir, err)
		}
		kept, err := filepath.Glob(*dir + ".destroyed-*")
		if err != nil || len(kept) != 1 {
			return fmt.Errorf("reports moved aside: %q (%v), want one %s.destroyed-* directory", kept, err, *dir)
		}
		for _, v := range variants {
			if _, err := os.Stat(filepath.Join(kept[0], "data", v)); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("data directory of %s after destroy: %v, want it gone", v, err)
			}
		}
		for _, f := range []string{"results.json", "summary.md", "journal.jsonl"} {
			if _, err := os.Stat(filepath.Join(kept[0], f)); err != nil {
				return fmt.Errorf("report %s after destroy: %v, want it kept", f, err)
			}
		}
		return nil
	}
}

// A tiny campaign on this machine, with the connection written in HCL: the
// resource on its own, an interrupted first apply, and the resume. Both
// variants have huge_pages = "off" so that this test, which does not take
// the kernel lock, never takes pages from a pool another test reserved.
func TestAccABBenchmarkLocal(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", abPGBin)
	runner := abInstallRunner(t)
	config := func(timeout string) string {
		return fmt.Sprintf(`
resource "pgbench_ab_benchmark" "t" {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  variant {
    name       = "sb16"
    bin_dir    = %q
    settings   = { shared_buffers = "16MB" }
    huge_pages = "off"
  }
  variant {
    name       = "sb128"
    bin_dir    = %q
    settings   = { shared_buffers = "128MB" }
    huge_pages = "off"
  }
  workload {
    scale      = 1
    clients    = [1, 2]
    duration   = "2s"
    iterations = 2
  }
  timeouts {
    create = %q
  }
}
`, runner, abPGBin, abPGBin, timeout)
	}
	variants := []string{"sb16", "sb128"}
	var dir string
	var resumedAt time.Time
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             abCheckDataRemoved(&dir, variants),
		Steps: []tfresource.TestStep{
			{
				// Stopped part way: the runs done so far stay in the
				// host's journal.
				Config:      config("12s"),
				ExpectError: regexp.MustCompile(`(?s)A/B Campaign Failed.*resume.*create\s+timeout`),
			},
			{
				PreConfig: func() { resumedAt = time.Now() },
				Config:    config("30m"),
				Check: tfresource.ComposeTestCheckFunc(
					abCheckResults("pgbench_ab_benchmark.t", variants, []int{1, 2}, 2, &dir),
					abCheckResumed(&dir, &resumedAt),
				),
			},
			{
				Config:           config("30m"),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// abCheckResumed checks that the campaign kept runs from before the resume:
// the interrupted apply's finished runs were not run again.
func abCheckResumed(dir *string, resumedAt *time.Time) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		res, err := report.ReadResults(filepath.Join(*dir, "results.json"))
		if err != nil {
			return err
		}
		before := 0
		for _, r := range res.Runs {
			if r.StartedAt.Before(*resumedAt) {
				before++
			}
		}
		if before == 0 || before == len(res.Runs) {
			return fmt.Errorf("%d of %d runs started before the resume at %s, want some but not all", before, len(res.Runs), resumedAt.Format(time.RFC3339))
		}
		return nil
	}
}

// The pipeline of the quickstart: host -> system build -> huge-page pool
// sized for the configuration -> a tiny 4 KB vs 2 MB pages campaign.
func TestAccABBenchmarkPipeline(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", abPGBin)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	prevPages := readSysctlInt(t, "vm.nr_hugepages")
	installDir := abTempDir(t)
	config := fmt.Sprintf(`
resource "pgbench_host" "h" {
  local       = true
  install_dir = %q
}

resource "pgbench_postgres_build" "pg" {
  host_connection = pgbench_host.h.connection_info
  source {
    system = %q
  }
}

resource "pgbench_hugepage_pool" "pool" {
  host_connection = pgbench_host.h.connection_info
  size_for {
    bin_dir  = pgbench_postgres_build.pg.bin_dir
    settings = { shared_buffers = "64MB" }
  }
}

resource "pgbench_ab_benchmark" "ab" {
  host_connection = pgbench_host.h.connection_info
  settings        = { shared_buffers = "64MB" }
  variant {
    name       = "4k"
    bin_dir    = pgbench_postgres_build.pg.bin_dir
    huge_pages = "off"
  }
  variant {
    name       = "2m"
    bin_dir    = pgbench_postgres_build.pg.bin_dir
    huge_pages = "on"
  }
  workload {
    scale      = 1
    clients    = [1, 2]
    duration   = "2s"
    iterations = 2
  }
  depends_on = [pgbench_hugepage_pool.pool]
}
`, installDir, abPGBin)
	variants := []string{"4k", "2m"}
	var dir string
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: tfresource.ComposeTestCheckFunc(
			abCheckDataRemoved(&dir, variants),
			func(*terraform.State) error {
				if got := readSysctlInt(t, "vm.nr_hugepages"); got != prevPages {
					return fmt.Errorf("vm.nr_hugepages after destroy = %d, want %d", got, prevPages)
				}
				return nil
			},
		),
		Steps: []tfresource.TestStep{
			{
				Config: config,
				Check: tfresource.ComposeTestCheckFunc(
					abCheckResults("pgbench_ab_benchmark.ab", variants, []int{1, 2}, 2, &dir),
					tfresource.TestCheckResourceAttr("pgbench_ab_benchmark.ab", "huge_pages_observed.2m", "on"),
					tfresource.TestCheckResourceAttr("pgbench_ab_benchmark.ab", "huge_pages_observed.4k", "off"),
				),
			},
			{
				Config:           config,
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func readSysctlInt(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(testhost.SysctlPath(name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, b, err)
	}
	return n
}
