package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	posixpath "path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
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
		{"no variants", "", abWorkload, diagPattern("No Variants", "variant: no variants: an A/B campaign needs two or more")},
		{"one variant", `
  variant {
    name    = "only"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, abWorkload, diagPattern("Only One Variant", "variant: only one variant (only)")},
		{"duplicate names", `
  variant {
    name    = "a"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }
  variant {
    name    = "a"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, abWorkload, diagPattern("Duplicate Variant Name", `variant[1].name: variant name "a" is used twice (variants 0 and 1)`)},
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
		{"no workload", abTwoVariants, "", `(?s)Missing Workload.*workload block is required`},
		{"variant name too long", `
  variant {
    name    = "` + strings.Repeat("n", 64) + `"
    bin_dir = "/x"
  }
  variant {
    name    = "b"
    bin_dir = "/x"
  }`, abWorkload, diagPattern("Invalid Variant Name", "variant[0].name: variant name \""+strings.Repeat("n", 64)+"\" is 64 characters long; the limit is 63")},
		{"bad alpha", abTwoVariants + `
  alpha = 0.7`, abWorkload, diagPattern("Invalid Alpha", "alpha: 0.7 must be more than 0 and at most 0.5")},
		{"empty clients", abTwoVariants, `
  workload {
    clients = []
  }`, diagPattern("No Client Counts", "workload.clients: no client counts")},
		{"missing clients", abTwoVariants, `
  workload {
    mode = "tpcb"
  }`, `No Client Counts`},
		{"zero clients", abTwoVariants, `
  workload {
    clients = [1, 0]
  }`, diagPattern("Invalid Client Count", "workload.clients[1]: client count 0 must be at least 1")},
		{"negative clients", abTwoVariants, `
  workload {
    clients = [-4]
  }`, diagPattern("Invalid Client Count", "workload.clients[0]: client count -4 must be at least 1")},
		{"iterations 0", abTwoVariants, `
  workload {
    clients    = [1]
    iterations = 0
  }`, diagPattern("Invalid Iterations", "workload.iterations: 0 must be at least 1")},
		{"iterations neither a number nor auto", abTwoVariants, `
  workload {
    clients    = [1]
    iterations = "many"
  }`, diagPattern("Invalid Iterations", `workload.iterations is "many": want a number of runs per variant and client count, or "auto"`)},
		{"target without adaptive iterations", abTwoVariants, `
  workload {
    clients       = [1]
    iterations    = 12
    target_ci_pct = 0.5
  }`, diagPattern("Adaptive Setting Without Adaptive Iterations", `workload.target_ci_pct applies only with workload.iterations = "auto"; workload.iterations is 12`)},
		{"adaptive with a randomized order", abTwoVariants + `
  order = "randomized"`, `
  workload {
    clients    = [1]
    iterations = "auto"
  }`, diagPattern("Adaptive Iterations Need The Alternating Order", "workload.iterations auto chooses each client count's length from its first pairs, which only order alternate makes")},
		{"adaptive maximum below its minimum", abTwoVariants, `
  workload {
    clients        = [1]
    iterations     = "auto"
    min_iterations = 8
    max_iterations = 6
  }`, diagPattern("Invalid Iterations", "workload.max_iterations: 6 is less than workload.min_iterations 8")},
		{"unknown mode", abTwoVariants, `
  workload {
    clients = [1]
    mode    = "read-write"
  }`, diagPattern("Unknown Workload Mode", `workload.mode: unknown pgbench mode "read-write": want one of select-only, tpcb, simple-update, custom`)},
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
  }`, diagPattern("Invalid Duration", "workload.duration: 0s must be positive")},
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
  }`, diagPattern("Invalid Protocol", `workload.protocol: unknown pgbench protocol "binary"`)},
		{"duplicate client counts", abTwoVariants, `
  workload {
    clients = [1, 16, 1]
  }`, diagPattern("Duplicate Client Count", "workload.clients[2]: client count 1 is given twice")},
		{"script without custom mode", abTwoVariants, `
  workload {
    clients = [1]
    mode    = "tpcb"
    script  = "/tmp/x.sql"
  }`, `(?s)Script Without Custom Mode.*mode is "tpcb"`},
		{"bad server numa", abTwoVariants + `
  server_numa = "cpunodebind"`, abWorkload, diagPattern("Invalid NUMA Pinning", `server_numa: cpunodebind needs a node or cpu list, e.g. cpunodebind=0, in "cpunodebind"`)},
		{"seed without randomized order", abTwoVariants + `
  seed = 7`, abWorkload, `(?s)Seed Without Randomized Order`},
		{"unknown profile mode", abTwoVariants + `
  observe {
    profile = "always"
  }`, abWorkload, diagPattern("Invalid Profile Mode", `observe.profile: "always", want none, one-per-cell or every-run`)},
		{"tpcc without warehouses", abTwoVariants, `
  workload {
    mode    = "tpcc"
    clients = [8]
  }`, diagPattern("Invalid Warehouses", "workload.warehouses: 0: workload.mode tpcc needs a dataset of at least 1 warehouse")},
		{"warehouses without tpcc", abTwoVariants, `
  workload {
    clients    = [8]
    warehouses = 10
  }`, diagPattern("Warehouses Without TPC-C", `workload.warehouses: only with workload.mode tpcc; workload.mode is "select-only"`)},
		{"max_connections too low", abTwoVariants + `
  settings = { max_connections = "40" }`, `
  workload {
    mode       = "tpcc"
    warehouses = 10
    clients    = [16, 64]
  }`, diagPattern("max_connections Too Low", `settings["max_connections"]: variant small: max_connections = 40 cannot take 64 clients and the runner's 2 own connections: raise max_connections to at least 66`)},
		{"wait sampling too fast", abTwoVariants + `
  observe {
    wait_sample_interval = "1ms"
  }`, abWorkload, diagPattern("Invalid Wait Sample Interval", "observe.wait_sample_interval: 1ms: want 0 (never) or from 10ms to 1m")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
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
// Values with ',' ';' '=' and quotes in settings and bin dirs used to be
// refused because they could not cross to the runner; they plan now, and
// TestAccABBenchmarkLocal finds one in the server's configuration.
func TestABBenchmarkValidationAccepts(t *testing.T) {
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []tfresource.TestStep{{
			Config: abTestConfig(`
  variant {
    name     = "small"
    bin_dir  = "/opt/pg,huge_pages=on/bin"
    settings = { search_path = "a,b;c=d 'q'" }
  }
  variant {
    name    = "big"
    bin_dir = "/usr/lib/postgresql/15/bin"
  }`, `
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
		}, {
			Config: abTestConfig(abTwoVariants, `
  workload {
    clients        = [1]
    iterations     = "auto"
    target_ci_pct  = 0.5
    min_iterations = 8
    max_iterations = 40
    warmup         = "auto"
  }`),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
}

// TestABBenchmarkValidationUnknown plans with values only known at apply:
// the checks that need them wait, the others still run.
func TestABBenchmarkValidationUnknown(t *testing.T) {
	unknown := `
resource "terraform_data" "later" {
  input = "custom"
}
`
	variants := `
  variant {
    name    = terraform_data.later.output
    bin_dir = terraform_data.later.output
  }
  variant {
    name    = terraform_data.later.output
    bin_dir = "/x"
  }`
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []tfresource.TestStep{
			{
				// Unknown names cannot be duplicates yet, an unknown mode may
				// be custom, an unknown seed may come with a randomized order.
				Config: unknown + abTestConfig(variants+`
  order = terraform_data.later.output
  seed  = 7`, `
  workload {
    clients  = [1]
    mode     = terraform_data.later.output
    script   = "/tmp/x.sql"
    duration = terraform_data.later.output
  }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: unknown + abTestConfig(variants, `
  workload {
    clients = [1, 0]
    mode    = terraform_data.later.output
  }`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(diagPattern("Invalid Client Count", "workload.clients[1]: client count 0 must be at least 1")),
			},
		},
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
		campaignModel: campaignModel{
			Settings: mustMap(t, map[string]string{"max_connections": "200", "fsync": "off"}),
			Workload: &campaignWorkloadModel{
				Mode: types.StringValue("tpcb"), Script: types.StringNull(), Scale: types.Int64Value(5), Clients: clients,
				Duration: types.StringValue("3s"), Iterations: types.StringValue("2"), Threads: types.StringNull(),
				Protocol: types.StringNull(), Warmup: types.StringValue("1s"), CheckpointBefore: types.BoolValue(true),
				Restart: types.StringNull(),
			},
			ServerNUMA: types.StringValue("cpunodebind=0"), ClientNUMA: types.StringNull(),
			Order: types.StringNull(), Seed: types.Int64Null(), Alpha: types.Float64Value(0.01),
		},
	}
	if order != "" {
		m.Order = types.StringValue(order)
	}
	if seed != nil {
		m.Seed = types.Int64Value(*seed)
	}
	return m
}

// TestABBenchmarkCommand asserts the runner command line the provider
// builds for a model, without running it: every field of the definition
// explicitly, in the campaign directory its key names.
func TestABBenchmarkCommand(t *testing.T) {
	ctx := context.Background()
	command := func(m *abBenchmarkModel) []string {
		t.Helper()
		c, err := abCampaign(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return abCommand(c, "/tmp/x")
	}
	got := command(abTestModel(t, "", nil))
	want := []string{
		"ab", "--out=/tmp/x/campaigns/KEY",
		"--variant=name=small,bin=/usr/lib/postgresql/15/bin,huge_pages=off",
		"--variant=name=big,bin=/opt/pg/bin,huge_pages=try",
		"--variant-set=small:effective_cache_size=64MB", "--variant-set=small:shared_buffers=16MB",
		"--set=fsync=off", "--set=max_connections=200",
		"--mode=tpcb", "--script=", "--scale=5", "--clients=1,16", "--threads=auto", "--duration=3s", "--iterations=2",
		"--protocol=simple", "--warmup=1s", "--checkpoint-before=true", "--restart=never", "--order=alternate",
		"--server-numa=cpunodebind=0", "--client-numa=", "--sampling-rate=auto",
		"--counters=true", "--wait-sample-interval=100ms", "--profile=none", "--profile-frequency=499", "--alpha=0.01", "--clone=false", "--progress-json",
	}
	want[1] = strings.Replace(want[1], "KEY", abKeyOf(t, got), 1)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("command =\n%q\nwant\n%q", got, want)
	}
	// The key is part of the contract with campaigns already on hosts: a
	// retried apply must find the same directory.
	if key := abKeyOf(t, got); key != "18dba9ce88e53bc6" {
		t.Errorf("campaign key = %s, want 18dba9ce88e53bc6", key)
	}

	// The same configuration gives the same campaign directory (resume);
	// a different one does not.
	if again := command(abTestModel(t, "", nil)); flagValue(again, "--out") != flagValue(got, "--out") {
		t.Fatalf("campaign directories of the same config = %s and %s, want equal", flagValue(got, "--out"), flagValue(again, "--out"))
	}
	rnd := command(abTestModel(t, "randomized", nil))
	if flagValue(rnd, "--out") == flagValue(got, "--out") {
		t.Fatalf("campaign directory did not change with order")
	}

	// randomized without a seed: a seed derived from the definition, the
	// same each time, so a retried apply resumes the same order.
	rnd2 := command(abTestModel(t, "randomized", nil))
	if s1, s2 := flagValue(rnd, "--seed"), flagValue(rnd2, "--seed"); s1 == "" || s1 != s2 {
		t.Fatalf("derived seeds = %q and %q, want equal and set", s1, s2)
	}
	seed := int64(42)
	if s := flagValue(command(abTestModel(t, "randomized", &seed)), "--seed"); s != "42" {
		t.Fatalf("--seed = %q, want 42", s)
	}
	if s := flagValue(got, "--seed"); s != "" {
		t.Fatalf("--seed with order alternate = %q, want none", s)
	}

	// What the provider sends is what the runner decodes.
	dec, err := campaign.Decode(got[1 : len(got)-1])
	if err != nil {
		t.Fatal(err)
	}
	if s := dec.Variants[0].Settings["shared_buffers"]; s != "16MB" || dec.Scale != 5 || dec.Alpha != 0.01 {
		t.Errorf("decoded = %+v, want the model's values", dec)
	}

	// Adaptive iterations and the automatic warm-up travel as such, with
	// the rule's defaults written out.
	ad := abTestModel(t, "", nil)
	ad.Workload.Iterations, ad.Workload.TargetCIPct, ad.Workload.Warmup = types.StringValue("auto"), types.Float64Value(0.5), types.StringValue("auto")
	adaptive := command(ad)
	for flag, want := range map[string]string{"--iterations": "auto", "--target-ci": "0.5", "--min-iterations": "6", "--max-iterations": "30", "--warmup": "auto"} {
		if v := flagValue(adaptive, flag); v != want {
			t.Errorf("adaptive %s = %q, want %q", flag, v, want)
		}
	}
	if flagValue(adaptive, "--out") == flagValue(got, "--out") {
		t.Errorf("campaign directory did not change with adaptive iterations")
	}
	if dec, err := campaign.Decode(adaptive[1 : len(adaptive)-1]); err != nil || !dec.IterationsAuto || dec.TargetCIPct != 0.5 || !dec.WarmupAuto || dec.Warmup != time.Second {
		t.Errorf("decoded adaptive = %+v, %v", dec, err)
	}
}

// abKeyOf is the campaign key in a command line's --out.
func abKeyOf(t *testing.T, args []string) string {
	t.Helper()
	return posixpath.Base(flagValue(args, "--out"))
}

// TestABBenchmarkOddValues checks that values no earlier encoding could
// carry (',' ';' '=' quotes, unicode) reach the runner's decoder unchanged.
func TestABBenchmarkOddValues(t *testing.T) {
	m := abTestModel(t, "", nil)
	const odd = `"$user", public; a=b 'q' ünï`
	vs := []abVariantModel{
		{Name: types.StringValue("a"), BinDir: types.StringValue("/opt/pg,huge_pages=on/bin"), Settings: mustMap(t, map[string]string{"search_path": odd}), HugePages: types.StringNull()},
		{Name: types.StringValue(strings.Repeat("b", campaign.MaxVariantName)), BinDir: types.StringValue("/x"), Settings: types.MapNull(types.StringType), HugePages: types.StringNull()},
	}
	vl, d := types.ListValueFrom(context.Background(), types.ObjectType{AttrTypes: abVariantAttrTypes}, vs)
	if d.HasError() {
		t.Fatal(d)
	}
	m.Variants = vl
	c, err := abCampaign(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	args := abCommand(c, "/tmp/x")
	dec, err := campaign.Decode(args[1 : len(args)-1])
	if err != nil {
		t.Fatal(err)
	}
	if got := dec.Variants[0]; got.Settings["search_path"] != odd || got.BinDir != "/opt/pg,huge_pages=on/bin" {
		t.Errorf("decoded variant = %+v, want search_path %q and the bin dir with its comma", got, odd)
	}
	if got := dec.Variants[1].Name; got != strings.Repeat("b", campaign.MaxVariantName) {
		t.Errorf("decoded name = %q, want the %d-character name", got, campaign.MaxVariantName)
	}
}

// flagValue is the value of --flag=value in args, "" when it is not there.
func flagValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func TestABBenchmarkResults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "ab_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.DecodeResults(b, "ab_results.json")
	if err != nil {
		t.Fatal(err)
	}
	var m abBenchmarkModel
	if d := m.setResults(context.Background(), res); d.HasError() {
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
	if !m.ClientHost.IsNull() {
		t.Fatalf("client_host = %s without a client host, want null", m.ClientHost)
	}
	res.Client = &report.ClientHost{Address: "10.0.0.2", ServerAddress: "10.0.0.1", PgbenchVersion: "pgbench (PostgreSQL) 15.18", Kernel: "6.1", CPUs: 2, MemoryBytes: 1 << 30}
	if d := m.setResults(context.Background(), res); d.HasError() {
		t.Fatal(d)
	}
	var client report.ClientHost
	if err := json.Unmarshal([]byte(m.ClientHost.ValueString()), &client); err != nil || client != *res.Client {
		t.Fatalf("client_host = %s (%v), want the results' client host %+v", m.ClientHost, err, *res.Client)
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

func TestABBenchmarkProgress(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	p := &campaignProgress{ctx: ctx}
	// A stand-in runner prints the progress lines on stderr, as the real
	// one does with --progress-json, and the runner client decodes them.
	runner := filepath.Join(t.TempDir(), "pgbench-runner")
	script := "#!/bin/sh\ncat >&2 <<'EOF'\n" + strings.Join([]string{
		`{"event":"phase","message":"initdb small"}`,
		`{"event":"run_start","seq":1,"total":4,"variant":"small","clients":1,"iteration":1}`,
		`{"event":"run_done","seq":1,"total":4,"variant":"small","clients":1,"iteration":1,"tps":1234.5,"seconds":3.01,"elapsed_seconds":12,"eta_seconds":9.4}`,
		`{"event":"warning","message":"client and server share CPUs"}`,
		`not json at all`,
		`{"event":"done","wall_seconds":25}`,
	}, "\n") + "\nEOF\necho '{}'\n"
	if err := os.WriteFile(runner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rc := runnerclient.New(remote.NewLocal(), runner)
	rc.OnEvent, rc.OnStderr = p.event, p.line
	if err := rc.Run(context.Background(), nil, "ab"); err != nil {
		t.Fatal(err)
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
		"debug campaign: run 1/4 started: small, 1 clients, iteration 1",
		"info campaign: run 1/4: small, 1 clients, iteration 1: 1234.5 tps in 3.0s, elapsed 12s, ETA 9s",
		"warn campaign: warning: client and server share CPUs",
		"debug pgbench-runner: not json at all",
		"info campaign: done in 25s",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log =\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if got, want := p.warnings, []string{"client and server share CPUs"}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("warnings = %q, want %q", got, want)
	}
}

// abCheckDataRemoved checks that destroy removed the campaign from the
// host: its data directories always; its reports too, or with keep (the
// resource's keep_on_host) moved aside so the same configuration measures
// again.
func abCheckDataRemoved(dir *string, variants []string, keep bool) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		if *dir == "" {
			return fmt.Errorf("report_dir was never recorded")
		}
		if _, err := os.Stat(*dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("campaign directory %s after destroy: %v, want it gone", *dir, err)
		}
		kept, err := filepath.Glob(*dir + ".destroyed-*")
		if err != nil {
			return err
		}
		if !keep {
			if len(kept) > 0 {
				return fmt.Errorf("reports kept on the host in %q, want them removed (the collected copy is home)", kept)
			}
			return nil
		}
		if len(kept) != 1 {
			return fmt.Errorf("reports moved aside: %q, want one %s.destroyed-* directory", kept, *dir)
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
// resource on its own, a first apply whose runner is interrupted once its
// first run is done (interruptedOnce), and the resume. Both
// variants have huge_pages = "off" so that this test, which does not take
// the kernel lock, never takes pages from a pool another test reserved.
func TestAccABBenchmarkLocal(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	runner := interruptedOnce(t, installRunner(t))
	local, moved := filepath.Join(t.TempDir(), "report"), filepath.Join(t.TempDir(), "moved")
	config := func(timeout, localDir string, alpha ...string) string {
		a := ""
		if len(alpha) > 0 {
			a = "alpha = " + alpha[0]
		}
		return fmt.Sprintf(`
resource "pgbench_ab_benchmark" "t" {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  local_dir = %q
  %s
  variant {
    name       = "sb16"
    bin_dir    = %q
    settings   = { shared_buffers = "16MB", "pgbench_test.note" = %q }
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
`, runner, localDir, a, systemPGBin, abOddSetting, systemPGBin, timeout)
	}
	variants := []string{"sb16", "sb128"}
	var dir string
	var resumedAt, recomputedAt time.Time
	sameID := statecheck.CompareValue(compare.ValuesSame())
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             abCheckDataRemoved(&dir, variants, false),
		Steps: []tfresource.TestStep{
			{
				// Stopped part way: the runs done so far stay in the
				// host's journal; progress.log has followed them.
				Config:      config("30m", local),
				ExpectError: regexp.MustCompile(`(?s)A/B Campaign Failed.*journal\.jsonl.*resume`),
			},
			{
				PreConfig: func() {
					resumedAt = time.Now()
					if _, err := os.Stat(filepath.Join(local, progressLogFile)); err != nil {
						t.Errorf("progress.log of the interrupted apply: %v", err)
					}
					if _, err := os.Stat(filepath.Join(local, "results.json")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("results.json collected from an unfinished campaign: %v", err)
					}
				},
				Config: config("30m", local),
				ConfigStateChecks: slices.Concat(abResultsChecks("pgbench_ab_benchmark.t", variants, []int{1, 2}, 2, &dir,
					func(d string) error { return abCheckResumed(d, resumedAt) },
					abCheckOddSetting),
					abCollectedChecks("pgbench_ab_benchmark.t", 8, 8, local, nil),
					[]statecheck.StateCheck{sameID.AddStateValue("pgbench_ab_benchmark.t", tfjsonpath.New("id")), abCheckHistory(local, 2)}),
			},
			{
				Config:           config("30m", local),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// A new alpha is an in-place update that recomputes the
				// verdicts from the journal: same campaign, no new runs,
				// and the collected copy follows.
				PreConfig: func() { recomputedAt = time.Now() },
				Config:    config("30m", local, "0.2"),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_ab_benchmark.t", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue("pgbench_ab_benchmark.t", tfjsonpath.New("id")),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("alpha"), knownvalue.Float64Exact(0.2)),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("summary_markdown"),
						knownvalue.StringRegexp(regexp.MustCompile(`verdict at alpha = 0\.2`))),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("report_dir"),
						knownvalue.StringFunc(func(d string) error { return abCheckRecomputed(d, recomputedAt, 0.2) })),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.t", tfjsonpath.New("local_report_dir"),
						knownvalue.StringFunc(func(d string) error { return abCheckLocalAlpha(d, 0.2) })),
				},
			},
			{
				// A new local_dir collects again, in place, measuring
				// nothing.
				Config: config("30m", moved, "0.2"),
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("pgbench_ab_benchmark.t", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: append(abCollectedChecks("pgbench_ab_benchmark.t", 8, 0, moved, nil),
					sameID.AddStateValue("pgbench_ab_benchmark.t", tfjsonpath.New("id")),
					// Collected again, not a new campaign: the history is
					// as it was.
					abCheckHistory(local, 2)),
			},
		},
	})
}

// abCheckResumed checks that the campaign in dir kept runs from before the
// resume: the interrupted apply's finished runs were not run again.
func abCheckResumed(dir string, resumedAt time.Time) error {
	res, err := readResults(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	before := 0
	for _, r := range res.Runs {
		if r.StartedAt.Before(resumedAt) {
			before++
		}
	}
	if before == 0 || before == len(res.Runs) {
		return fmt.Errorf("%d of %d runs started before the resume at %s, want some but not all", before, len(res.Runs), resumedAt.Format(time.RFC3339))
	}
	return nil
}

// abCheckRecomputed checks that results.json in dir was written again at
// alpha without measuring: every run started before the recompute.
func abCheckRecomputed(dir string, at time.Time, alpha float64) error {
	res, err := readResults(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	if res.Alpha != alpha {
		return fmt.Errorf("results.json alpha = %v, want %v", res.Alpha, alpha)
	}
	for _, r := range res.Runs {
		if !r.StartedAt.Before(at) {
			return fmt.Errorf("run %d started at %s, after the recompute began: the campaign measured again", r.Seq, r.StartedAt.Format(time.RFC3339))
		}
	}
	return nil
}

// abOddSetting is a setting value with every character an earlier encoding
// of variant settings could not carry.
const abOddSetting = `a=b, c;d 'q' "dq" ünï`

// abCheckOddSetting checks that abOddSetting reached the sb16 server's
// configuration unchanged.
func abCheckOddSetting(dir string) error {
	conf := filepath.Join(dir, "data", "sb16", "postgresql.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		return err
	}
	if want := "pgbench_test.note = " + pgctl.QuoteValue(abOddSetting) + "\n"; !strings.Contains(string(b), want) {
		return fmt.Errorf("%s has no line %q", conf, want)
	}
	return nil
}

// The pipeline of the quickstart: host -> system build -> huge-page pool
// sized for the configuration -> a tiny 4 KB vs 2 MB pages campaign.
func TestAccABBenchmarkPipeline(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	prevPages := readSysctlInt(t, "vm.nr_hugepages")
	installDir, localDir := reachableTempDir(t), filepath.Join(t.TempDir(), "report")
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
  local_dir       = %q
  keep_on_host    = true
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
`, installDir, systemPGBin, localDir)
	variants := []string{"4k", "2m"}
	var dir string
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: tfresource.ComposeTestCheckFunc(
			abCheckDataRemoved(&dir, variants, true),
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
				ConfigStateChecks: append(slices.Concat(abResultsChecks("pgbench_ab_benchmark.ab", variants, []int{1, 2}, 2, &dir),
					abCollectedChecks("pgbench_ab_benchmark.ab", 8, 8, localDir, nil)),
					statecheck.ExpectKnownValue("pgbench_ab_benchmark.ab", tfjsonpath.New("huge_pages_observed"),
						knownvalue.MapExact(map[string]knownvalue.Check{"2m": knownvalue.StringExact("on"), "4k": knownvalue.StringExact("off")}))),
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

// Two campaigns on one host with no dependency between them: Terraform
// creates them at the same time, and the runner's host lock makes them
// take turns. Both finish, and their journals on the host show that
// neither measured while the other did.
func TestAccABBenchmarkOneMeasurementAtATime(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "pgbench", systemPGBin)
	runner := installRunner(t)
	local := t.TempDir()
	campaign := func(name, sharedBuffers string) string {
		return fmt.Sprintf(`
resource "pgbench_ab_benchmark" %q {
  host_connection = {
    mode        = "local"
    runner_path = %q
  }
  local_dir = %q
  settings  = { shared_buffers = %q }
  variant {
    name       = "a"
    bin_dir    = %q
    huge_pages = "off"
  }
  variant {
    name       = "b"
    bin_dir    = %q
    huge_pages = "off"
  }
  workload {
    scale      = 1
    clients    = [1]
    duration   = "1s"
    iterations = 2
  }
}
`, name, runner, filepath.Join(local, name), sharedBuffers, systemPGBin, systemPGBin)
	}
	variants := []string{"a", "b"}
	dirs := make([]string, 2)
	record := func(i int) func(string) error {
		return func(d string) error { dirs[i] = d; return nil }
	}
	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: tfresource.ComposeAggregateTestCheckFunc(
			abCheckDataRemoved(&dirs[0], variants, false), abCheckDataRemoved(&dirs[1], variants, false)),
		Steps: []tfresource.TestStep{{
			Config: campaign("one", "16MB") + campaign("two", "32MB"),
			Check: tfresource.ComposeTestCheckFunc(
				tfresource.TestCheckResourceAttrWith("pgbench_ab_benchmark.one", "report_dir", record(0)),
				tfresource.TestCheckResourceAttrWith("pgbench_ab_benchmark.two", "report_dir", record(1)),
				func(*terraform.State) error { return abCheckTookTurns(t, dirs) },
				// Both collected their reports, and appended to the one
				// history beside them without tearing each other's lines.
				func(*terraform.State) error {
					f, err := os.Open(filepath.Join(local, historyFile))
					if err != nil {
						return err
					}
					defer f.Close()
					entries, err := report.ReadHistory(f)
					if err != nil || len(entries) != 2 || entries[0].Campaign == entries[1].Campaign {
						return fmt.Errorf("history: %d entries (%v), want one of each campaign", len(entries), err)
					}
					return nil
				},
			),
		}},
	})
}

// abCheckTookTurns reads the journals of the campaigns in dirs and checks
// that each measured all its runs, that no campaign's measured phase
// (first run's start to last run's end) overlaps another's, and that the
// campaigns did run at the same time: each journal was started before the
// other campaign finished measuring.
func abCheckTookTurns(t *testing.T, dirs []string) error {
	type span struct{ started, first, last time.Time }
	spans := make([]span, len(dirs))
	for i, d := range dirs {
		if d == dirs[(i+1)%len(dirs)] {
			return fmt.Errorf("campaigns %d and %d share the directory %s, want one each", i, (i+1)%len(dirs), d)
		}
		b, err := os.ReadFile(filepath.Join(d, campaign.JournalFile))
		if err != nil {
			return err
		}
		runs := 0
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var line struct {
				Header *struct {
					StartedAt time.Time `json:"started_at"`
				} `json:"header"`
				Run *report.Run `json:"run"`
			}
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				return fmt.Errorf("journal of %s: %v", d, err)
			}
			if line.Header != nil {
				spans[i].started = line.Header.StartedAt
			}
			if line.Run == nil {
				continue
			}
			runs++
			end := line.Run.StartedAt.Add(time.Duration(line.Run.Seconds * float64(time.Second)))
			if spans[i].first.IsZero() || line.Run.StartedAt.Before(spans[i].first) {
				spans[i].first = line.Run.StartedAt
			}
			if end.After(spans[i].last) {
				spans[i].last = end
			}
		}
		if runs != 4 {
			return fmt.Errorf("journal of %s holds %d runs, want 4", d, runs)
		}
		t.Logf("%s started %s, measured %s-%s", d, spans[i].started.Format("15:04:05.000"), spans[i].first.Format("15:04:05.000"), spans[i].last.Format("15:04:05.000"))
	}
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i].first.Before(spans[j].last) && spans[j].first.Before(spans[i].last) {
				return fmt.Errorf("measured phases overlap: %s measured %s-%s, %s measured %s-%s", dirs[i],
					spans[i].first.Format(time.RFC3339Nano), spans[i].last.Format(time.RFC3339Nano), dirs[j],
					spans[j].first.Format(time.RFC3339Nano), spans[j].last.Format(time.RFC3339Nano))
			}
			if !spans[i].started.Before(spans[j].last) || !spans[j].started.Before(spans[i].last) {
				return fmt.Errorf("the campaigns did not run at the same time: %s started %s and measured until %s, %s started %s and measured until %s",
					dirs[i], spans[i].started.Format(time.RFC3339Nano), spans[i].last.Format(time.RFC3339Nano),
					dirs[j], spans[j].started.Format(time.RFC3339Nano), spans[j].last.Format(time.RFC3339Nano))
			}
		}
	}
	return nil
}
