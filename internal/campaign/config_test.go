package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/sysinfo"
)

func TestPlanAlternate(t *testing.T) {
	tests := []struct {
		variants   []string
		iterations int
		want       string
	}{
		{[]string{"A", "B"}, 3, "A B B A A B"},
		{[]string{"A", "B", "C"}, 3, "A B C B C A C A B"},
		{[]string{"A", "B"}, 1, "A B"},
	}
	for _, tt := range tests {
		c := &Config{Clients: []int{1, 8}, Iterations: tt.iterations, Order: OrderAlternate}
		for _, v := range tt.variants {
			c.Variants = append(c.Variants, Variant{Name: v})
		}
		steps := c.Plan()
		if len(steps) != 2*tt.iterations*len(tt.variants) {
			t.Fatalf("len(plan) = %d, want %d", len(steps), 2*tt.iterations*len(tt.variants))
		}
		half := len(steps) / 2
		if got := planString(steps[:half]); got != tt.want {
			t.Errorf("plan at 1 client = %q, want %q", got, tt.want)
		}
		if got := planString(steps[half:]); got != tt.want {
			t.Errorf("plan at 8 clients = %q, want %q", got, tt.want)
		}
		for i, s := range steps {
			if s.Seq != i+1 {
				t.Errorf("step %d seq = %d, want %d", i, s.Seq, i+1)
			}
			wantClients := 1
			if i >= half {
				wantClients = 8
			}
			if s.Clients != wantClients {
				t.Errorf("step %d clients = %d, want %d", i, s.Clients, wantClients)
			}
		}
	}
}

func TestPlanRandomized(t *testing.T) {
	c := &Config{Variants: []Variant{{Name: "A"}, {Name: "B"}}, Clients: []int{1, 4}, Iterations: 6, Order: OrderRandomized, Seed: 42}
	p1, p2 := c.Plan(), c.Plan()
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("the same seed gave two plans:\n%v\n%v", p1, p2)
	}
	c.Seed = 43
	if p3 := c.Plan(); reflect.DeepEqual(p1, p3) {
		t.Errorf("seeds 42 and 43 gave the same plan %q", planString(p3))
	}
	alt := *c
	alt.Order = OrderAlternate
	if planString(p1) == planString(alt.Plan()) {
		t.Errorf("randomized plan %q is the alternate one", planString(p1))
	}
	// Each cell still has every iteration of every variant, numbered in run order.
	for _, clients := range c.Clients {
		next := map[string]int{}
		for _, s := range p1 {
			if s.Clients != clients {
				continue
			}
			next[s.Variant]++
			if s.Iteration != next[s.Variant] {
				t.Errorf("c%d %s iteration = %d, want %d", clients, s.Variant, s.Iteration, next[s.Variant])
			}
		}
		if next["A"] != 6 || next["B"] != 6 {
			t.Errorf("c%d runs per variant = %v, want 6 each", clients, next)
		}
	}
	// Cells are not mixed: all of clients=1 before clients=4.
	for i, s := range p1 {
		if (i < 12) != (s.Clients == 1) {
			t.Fatalf("step %d has %d clients: cells are interleaved", i+1, s.Clients)
		}
	}
}

func TestParseVariant(t *testing.T) {
	tests := []struct {
		in      string
		want    Variant
		wantErr string
	}{
		{"name=stock,bin=/opt/pg/bin", Variant{Name: "stock", BinDir: "/opt/pg/bin", Settings: map[string]string{}}, ""},
		{"name=hp,bin=/b,set=shared_buffers=1GB;work_mem=4MB,huge_pages=on",
			Variant{Name: "hp", BinDir: "/b", HugePages: "on", Settings: map[string]string{"shared_buffers": "1GB", "work_mem": "4MB"}}, ""},
		{"name=p,bin=/b,set=search_path=a,b", Variant{Name: "p", BinDir: "/b", Settings: map[string]string{"search_path": "a,b"}}, ""},
		{`name=p,bin=/opt/pg\,huge_pages=on/bin\\x,huge_pages=off`, Variant{Name: "p", BinDir: `/opt/pg,huge_pages=on/bin\x`, HugePages: "off", Settings: map[string]string{}}, ""},
		{"bin=/b", Variant{}, "name= is missing"},
		{"name=x", Variant{}, "bin= is missing"},
		{"name=x,bin=/b,colour=red", Variant{}, `unknown key "colour"`},
		{"name=x,bin=/b,set=oops", Variant{}, `setting "oops" is not k=v`},
	}
	for _, tt := range tests {
		got, err := parseVariant(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseVariant(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseVariant(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseNUMA(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"cpunodebind=0", []string{"--cpunodebind=0"}, false},
		{"cpunodebind=0,membind=0", []string{"--cpunodebind=0", "--membind=0"}, false},
		{"physcpubind=0-3,localalloc", []string{"--physcpubind=0-3", "--localalloc"}, false},
		{"physcpubind=1,3,membind=0", []string{"--physcpubind=1,3", "--membind=0"}, false},
		{"cpunodebind", nil, true},
		{"cpunodebind=x", nil, true},
		{"nodes=0", nil, true},
		{"cpunodebind=0;rm -rf /", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseNUMA(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseNUMA(%q) = %q, %v, want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseClients checks --clients: the numbers parse, and what is not a
// list of distinct positive counts is refused.
func TestParseClients(t *testing.T) {
	got, err := parseClients("1, 16,64")
	if err != nil || !reflect.DeepEqual(got, []int{1, 16, 64}) {
		t.Errorf("parseClients = %v, %v, want [1 16 64]", got, err)
	}
	for _, bad := range []string{"", "0", "1,-2", "a", "4,4", "1,,2"} {
		c, err := Decode([]string{"--clients", bad})
		if err == nil {
			err = c.Validate()
		}
		found := false
		for _, ve := range ValidationErrors(err) {
			found = found || ve.Path.Flag == "clients"
		}
		if !found {
			t.Errorf("--clients %q: error = %v, want a validation error of --clients", bad, err)
		}
	}
}

func TestThreads(t *testing.T) {
	c := &Config{Threads: "auto", NumCPU: 4}
	for clients, want := range map[int]int{1: 1, 3: 3, 16: 4} {
		if got := c.threads(clients); got != want {
			t.Errorf("auto threads(%d) = %d, want %d", clients, got, want)
		}
	}
	c.Threads = "8"
	if got := c.threads(2); got != 2 {
		t.Errorf("threads=8 with 2 clients = %d, want 2 (pgbench refuses more threads than clients)", got)
	}
}

func TestJournalRefusesOtherCampaign(t *testing.T) {
	dir := t.TempDir()
	c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x", HugePages: "try"}, {Name: "b", BinDir: "/x", HugePages: "try"}},
		Mode: "tpcb", Scale: 1, Clients: []int{1}, Duration: 2 * time.Second, Iterations: 3}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j, err := openJournal(dir, c.definition(), false, now)
	if err != nil {
		t.Fatal(err)
	}
	run := report.Run{Seq: 1, Variant: "a", Clients: 1, Iteration: 1, TPS: 100}
	if err := j.Append(run); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// A torn line from a crash mid-write is dropped, not fatal.
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"run":{"seq":2,"vari`)
	f.Close()

	j, err = openJournal(dir, c.definition(), false, now.Add(time.Hour))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if len(j.Runs) != 1 || j.Runs[1].TPS != 100 || !j.StartedAt.Equal(now) {
		t.Errorf("reopened journal runs = %v, started %v, want run 1 at 100 tps, started %v", j.Runs, j.StartedAt, now)
	}
	if err := j.Append(report.Run{Seq: 2, Variant: "b", Clients: 1, Iteration: 1, TPS: 90}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j, err = openJournal(dir, c.definition(), false, now)
	if err != nil || len(j.Runs) != 2 {
		t.Fatalf("after append past a torn line: runs = %v, err %v, want 2 runs", j.Runs, err)
	}
	j.Close()

	other := *c
	other.Scale = 5
	if _, err := openJournal(dir, other.definition(), false, now); err == nil || !strings.Contains(err.Error(), "scale differs: journal has 1, now 5") {
		t.Errorf("different scale: error = %v, want it to name scale", err)
	}
	other = *c
	other.Variants = []Variant{c.Variants[0], {Name: "b", BinDir: "/y", HugePages: "try"}}
	if _, err := openJournal(dir, other.definition(), false, now); err == nil || !strings.Contains(err.Error(), "variants") || !strings.Contains(err.Error(), `"/y"`) {
		t.Errorf("different variant: error = %v, want it to name the variant", err)
	}
	j, err = openJournal(dir, other.definition(), true, now)
	if err != nil || len(j.Runs) != 0 {
		t.Fatalf("--fresh: runs = %v, err %v, want an empty journal", j.Runs, err)
	}
	j.Close()
	old, _ := filepath.Glob(filepath.Join(dir, JournalFile+".*.old"))
	if len(old) != 1 {
		t.Errorf("--fresh kept %d old journals, want 1", len(old))
	}
}

func TestCPUSetOverlap(t *testing.T) {
	nodes := []sysinfo.Node{{ID: 0, CPUs: []int{0, 1}}, {ID: 1, CPUs: []int{2, 3}}}
	tests := []struct {
		spec string
		want []int
	}{
		{"cpunodebind=1,membind=1", []int{2, 3}},
		{"membind=0,cpunodebind=0-1", []int{0, 1, 2, 3}},
		{"physcpubind=1,3,membind=0", []int{1, 3}},
		{"physcpubind=1-2", []int{1, 2}},
		{"membind=0", nil},
	}
	for _, tt := range tests {
		got := cpuSet(tt.spec, nodes)
		var list []int
		for c := range got {
			list = append(list, c)
		}
		sort.Ints(list)
		if !reflect.DeepEqual(list, tt.want) {
			t.Errorf("cpuSet(%q) = %v, want %v", tt.spec, list, tt.want)
		}
	}
	for _, tt := range []struct {
		server, client string
		want           string
	}{
		{"physcpubind=0-1", "physcpubind=1", "share 1 CPUs"},
		{"physcpubind=0", "physcpubind=1", ""},
		{"physcpubind=0", "", "only one of the server and the client is pinned"},
		// A memory policy alone leaves the process on every CPU.
		{"membind=0", "physcpubind=1", "share 1 CPUs"},
		{"cpunodebind=1", "interleave=0,1", "share 2 CPUs"},
		{"membind=0", "membind=1", "share 4 CPUs"},
		{"cpunodebind=0,membind=0", "cpunodebind=1,membind=1", ""},
	} {
		e := &engine{cfg: &Config{ServerNUMA: tt.server, ClientNUMA: tt.client}, emit: func(Event) {}, nodes: nodes}
		e.checkOverlap()
		got := strings.Join(e.warnings, "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("server %q client %q: warnings = %q, want %q", tt.server, tt.client, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	bin := fakeBinDir(t)
	valid := func() *Config {
		c := &Config{
			Variants: []Variant{{Name: "a", BinDir: bin, Settings: map[string]string{"work_mem": "4MB"}}, {Name: "b", BinDir: bin, Settings: map[string]string{}}},
			Settings: map[string]string{"shared_buffers": "128MB"},
			Scale:    1, Clients: []int{1, 4}, Duration: time.Second, Iterations: 5, OutDir: t.TempDir(),
		}
		c.Defaults()
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("Validate(valid) = %v, want nil", err)
	}
	for _, tt := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"bad shared setting", func(c *Config) { c.Settings["bad name"] = "1" }, `--set: setting name "bad name" is not valid`},
		{"bad variant setting", func(c *Config) { c.Variants[1].Settings["work-mem"] = "1" }, `--variant: variant b: setting name "work-mem" is not valid`},
		{"dotted variant setting", func(c *Config) { c.Variants[1].Settings["auto_explain.log_min_duration"] = "0" }, ""},
		{"duplicate clients", func(c *Config) { c.Clients = []int{1, 8, 1} }, "--clients: client count 1 is given twice"},
		{"unknown profile mode", func(c *Config) { c.Profile = "always" }, `--profile: "always", want none, one-per-cell or every-run`},
		{"profile frequency too high", func(c *Config) { c.Profile, c.ProfileFrequency = ProfileEveryRun, 50000 }, "--profile-frequency: 50000 samples per second: want 1 to 10000"},
		{"frequency without profiling", func(c *Config) { c.ProfileFrequency = 50000 }, ""},
		{"wait sampling too fast", func(c *Config) { c.WaitSampleInterval = time.Millisecond }, "--wait-sample-interval: 1ms: want 0 (never) or from 10ms to 1m; sampling faster than that costs throughput"},
	} {
		c := valid()
		tt.change(c)
		err := c.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: Validate = %q, want %q", tt.name, got, tt.want)
		}
		if err != nil && !IsValidation(err) {
			t.Errorf("%s: IsValidation(%v) = false, want true", tt.name, err)
		}
	}
}

func TestReproduceCommandSeed(t *testing.T) {
	cmd := []string{"pgbench-runner", "ab", "--order", "randomized"}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"clock seed", Config{Order: OrderRandomized, Seed: 1234, Command: cmd}, "pgbench-runner ab --order randomized --seed 1234"},
		{"seed given", Config{Order: OrderRandomized, Seed: 7, SeedSet: true, Command: append(cmd[:4:4], "--seed", "7")}, "pgbench-runner ab --order randomized --seed 7"},
		{"alternate", Config{Order: OrderAlternate, Seed: 0, Command: cmd[:2]}, "pgbench-runner ab"},
		{"no command", Config{Order: OrderRandomized, Seed: 5}, ""},
	} {
		got := strings.Join(tt.cfg.reproduceCommand(), " ")
		if got != tt.want {
			t.Errorf("%s: reproduceCommand = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := strings.Join(cmd, " "); got != "pgbench-runner ab --order randomized" {
		t.Errorf("reproduceCommand changed Command to %q", got)
	}
}

// TestPlanProfiles checks where profiled runs go: every run with
// every-run, one extra run per variant and client count after all the
// measured ones with one-per-cell, which leaves the measured runs as they
// are without profiling.
func TestPlanProfiles(t *testing.T) {
	base := func(mode string) *Config {
		c := &Config{Variants: []Variant{{Name: "a"}, {Name: "b"}}, Clients: []int{1, 8}, Iterations: 2, Profile: mode}
		c.Defaults()
		return c
	}
	none, every, one := base(ProfileNone).Plan(), base(ProfileEveryRun).Plan(), base(ProfileOnePerCell).Plan()
	if len(every) != len(none) || len(one) != len(none)+4 {
		t.Fatalf("plans of %d, %d and %d runs; want 8, 8 and 12", len(none), len(every), len(one))
	}
	for i, st := range every {
		if !st.Profiled || st.Variant != none[i].Variant || st.Iteration != none[i].Iteration {
			t.Errorf("every-run step %d = %+v, want %+v profiled", i, st, none[i])
		}
	}
	for i, st := range one[:len(none)] {
		if st != none[i] {
			t.Errorf("one-per-cell measured step %d = %+v, want %+v", i, st, none[i])
		}
	}
	var extra []string
	for _, st := range one[len(none):] {
		if !st.Profiled || st.Iteration != 0 {
			t.Errorf("extra step %+v, want profiled with iteration 0", st)
		}
		extra = append(extra, fmt.Sprintf("%s/c%d#%d", st.Variant, st.Clients, st.Seq))
	}
	if got, want := strings.Join(extra, " "), "a/c1#9 b/c1#10 a/c8#11 b/c8#12"; got != want {
		t.Errorf("profiled runs %s, want %s", got, want)
	}
}
