package campaign

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// awkward are values that must cross the command line unchanged.
var awkward = []string{
	"", "plain", "a=b", "a,b", "a;b", "k=v;k2=v2", "with space", " leading and trailing ", `"double"`, "'single'",
	`back\slash`, `trailing\`, `\,`, "--json", "-x", "name=evil,bin=/tmp", "set=a=b", "ünïcødé 🐘", "tab\there", "new\nline",
	"huge_pages=on", "a:b", "%s %d %%",
}

func roundTrip(t *testing.T, c *Config) {
	t.Helper()
	c.Defaults()
	args := c.Args()
	got, err := Decode(args)
	if err != nil {
		t.Fatalf("Decode(%q) = %v", args, err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("Decode(Args()) differs:\nargs %q\ngot  %+v\nwant %+v", args, got, c)
	}
	if again := got.Args(); !reflect.DeepEqual(again, args) {
		t.Fatalf("Args of the decoded config = %q, want %q", again, args)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	longName := strings.Repeat("n", MaxVariantName-2) + ".x"
	settings := map[string]string{}
	for i, v := range awkward {
		settings[fmt.Sprintf("custom.s%02d", i)] = v
	}
	tests := []struct {
		name string
		c    *Config
	}{
		{"defaults", DefaultConfig()},
		{"every field", &Config{
			Variants: []Variant{
				{Name: "stock", BinDir: "/opt/pg/stock/bin", Settings: map[string]string{"shared_buffers": "1GB", "work_mem": "64MB"}, HugePages: "on"},
				{Name: longName, BinDir: `/opt/pg,huge_pages=on\dir/bin`, Settings: settings, HugePages: "off"},
				{Name: "try-1.2_3", BinDir: "/ü/bin"},
			},
			Settings: settings,
			Mode:     "custom", Script: "/tmp/a script,with=odd;chars.sql", Scale: 3000, Clients: []int{1, 16, 64},
			Threads: "8", Duration: 90 * time.Second, Iterations: 12, Protocol: "prepared", Warmup: 10 * time.Second,
			CheckpointBefore: true, Restart: RestartCell, Order: OrderRandomized, Seed: -42, SeedSet: true,
			ServerNUMA: "cpunodebind=0,membind=0", ClientNUMA: "physcpubind=1,3", SamplingRate: "0.25", Alpha: 0.001,
			OutDir: "/var/lib/pgbench/campaigns/0123456789abcdef", DataDir: "/data, big", Clone: true,
			ClientHost: "bench@[fd00::2]:2222", ClientHostKey: "ssh-ed25519 AAAAC3Nz key, with=odd chars", ClientBinDir: "/opt/pg client/bin", ClientKeyFile: "-",
		}},
		{"seed zero set", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}, Scale: 1, Clients: []int{1},
			Duration: time.Second, Iterations: 1, Order: OrderRandomized, SeedSet: true}},
		{"fractional duration", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}}, Duration: 1500 * time.Millisecond, Warmup: 250 * time.Millisecond, Clients: []int{2}}},
		{"adaptive, warm-up auto", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}, Scale: 1, Clients: []int{1, 8},
			Duration: 30 * time.Second, IterationsAuto: true, TargetCIPct: 0.5, MinIterations: 8, MaxIterations: 40, WarmupAuto: true}},
		{"adaptive at its defaults", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}, Scale: 1, Clients: []int{1},
			Duration: time.Minute, IterationsAuto: true}},
		{"sampling rate one", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}}, Clients: []int{1}, SamplingRate: "1"}},
		{"tiny sampling rate", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}}, Clients: []int{1}, SamplingRate: "1e-06"}},
		{"tpcc", &Config{Variants: []Variant{{Name: "a", BinDir: "/b"}, {Name: "b", BinDir: "/b"}}, Mode: ModeTPCC, Warehouses: 1000,
			Clients: []int{64, 192}, Duration: 5 * time.Minute, Iterations: 5, WarmupAuto: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { roundTrip(t, tt.c) })
	}
}

// TestEncodeDecodeRandom round-trips definitions built at random from the
// awkward values.
func TestEncodeDecodeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return awkward[rng.IntN(len(awkward))] }
	settings := func() map[string]string {
		m := map[string]string{}
		for i := rng.IntN(4); i > 0; i-- {
			m[fmt.Sprintf("s_%d.x", rng.IntN(100))] = pick()
		}
		return m
	}
	for n := 0; n < 300; n++ {
		c := &Config{Settings: settings(), Scale: rng.IntN(10000), Iterations: rng.IntN(50), Threads: pick(),
			Duration: time.Duration(rng.IntN(1000)) * time.Second, Warmup: time.Duration(rng.IntN(100)) * time.Second,
			Mode: pick(), Script: pick(), Protocol: pick(), Restart: pick(), Order: pick(),
			ServerNUMA: pick(), ClientNUMA: pick(), SamplingRate: pick(), CheckpointBefore: rng.IntN(2) == 0, Clone: rng.IntN(2) == 0,
			Alpha: rng.Float64(), Warehouses: max(0, rng.IntN(200)-100)}
		for i := rng.IntN(4); i > 0; i-- {
			c.Clients = append(c.Clients, rng.IntN(200)-10)
		}
		if c.Clients == nil {
			c.Clients = []int{1}
		}
		if rng.IntN(2) == 0 {
			c.Seed, c.SeedSet = rng.Int64()-rng.Int64(), true
		}
		if rng.IntN(3) == 0 {
			c.IterationsAuto, c.TargetCIPct, c.MinIterations, c.MaxIterations = true, rng.Float64()*5, rng.IntN(20)-2, rng.IntN(60)
		}
		c.WarmupAuto = rng.IntN(3) == 0
		for i := rng.IntN(4); i > 0; i-- {
			c.Variants = append(c.Variants, Variant{Name: fmt.Sprintf("v%d-%d", n, i), BinDir: "/" + pick() + "/bin", Settings: settings(), HugePages: pick()})
		}
		roundTrip(t, c)
	}
}

// TestArgs pins the command line of a definition: the form the provider
// sends and a person can type.
func TestArgs(t *testing.T) {
	c := &Config{
		Variants: []Variant{
			{Name: "stock", BinDir: "/opt/pg,x/bin", HugePages: "off"},
			{Name: "patched", BinDir: "/opt/p/bin", Settings: map[string]string{"work_mem": "64MB", "search_path": `"$user", public`}},
		},
		Settings: map[string]string{"shared_buffers": "1GB", "fsync": "off"},
		Scale:    100, Clients: []int{1, 16}, Duration: 2 * time.Minute, Iterations: 7, OutDir: "/c",
	}
	c.Defaults()
	want := []string{
		"--out=/c",
		`--variant=name=stock,bin=/opt/pg\,x/bin,huge_pages=off`,
		"--variant=name=patched,bin=/opt/p/bin,huge_pages=try",
		`--variant-set=patched:search_path="$user", public`,
		"--variant-set=patched:work_mem=64MB",
		"--set=fsync=off", "--set=shared_buffers=1GB",
		"--mode=select-only", "--script=", "--scale=100", "--clients=1,16", "--threads=auto", "--duration=120s",
		"--iterations=7", "--protocol=simple", "--warmup=0s", "--checkpoint-before=false", "--restart=never",
		"--order=alternate", "--server-numa=", "--client-numa=", "--sampling-rate=auto",
		"--counters=false", "--wait-sample-interval=0s", "--profile=none", "--profile-frequency=499",
		"--alpha=0.05", "--data-dir=/c/data", "--clone=false",
	}
	if got := c.Args(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Args =\n%q\nwant\n%q", got, want)
	}
}

// TestLegacyVariantSet reads the set= form a person may type as the same
// definition as --variant-set.
func TestLegacyVariantSet(t *testing.T) {
	old, err := Decode([]string{"--variant", "name=a,bin=/x,set=work_mem=4MB;search_path=a,b,huge_pages=on"})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Decode([]string{"--variant", "name=a,bin=/x,huge_pages=on", "--variant-set", "a:work_mem=4MB", "--variant-set", "a:search_path=a,b"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old, cur) {
		t.Errorf("set= form = %+v, want %+v", old.Variants, cur.Variants)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--variant", "name=a,bin=/x", "--variant-set", "b:work_mem=1MB"}, `--variant-set "b:work_mem=1MB": no --variant is named "b"`},
		{[]string{"--variant", "name=a,bin=/x", "--variant-set", "a:work_mem"}, `--variant-set "a:work_mem": want NAME:KEY=VALUE`},
		{[]string{"--set", "=x"}, `--set "=x": want KEY=VALUE`},
		{[]string{"--variant", "name=a"}, "--variant: variant \"name=a\": bin= is missing"},
		{[]string{"--clients", "1,x"}, `--clients: client count "x" is not a number`},
	} {
		_, err := Decode(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !IsValidation(err) {
			t.Errorf("Decode(%q) = %v, want a validation error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestFields checks the defaults table against the flags: every field with
// a flag is declared with the table's default and usage, every flag is in
// the table, and the encoder writes every field.
func TestFields(t *testing.T) {
	var c Config
	fs := newFlagSet()
	BindFlags(fs, &c)
	declared := map[string]bool{}
	fs.VisitAll(func(fl *pflag.Flag) { declared[fl.Name] = true })
	for _, f := range Fields {
		if f.Flag == "" {
			if f.Attribute == "" {
				t.Errorf("field %+v has neither a flag nor an attribute", f)
			}
			continue
		}
		fl := fs.Lookup(f.Flag)
		if fl == nil {
			t.Errorf("field --%s is not a flag", f.Flag)
			continue
		}
		delete(declared, f.Flag)
		if fl.Usage != f.Usage || f.Usage == "" {
			t.Errorf("--%s usage = %q, want the table's %q", f.Flag, fl.Usage, f.Usage)
		}
		if f.Default != "" && fl.DefValue != f.Default {
			t.Errorf("--%s default = %q, want the table's %q", f.Flag, fl.DefValue, f.Default)
		}
		if strings.Contains(f.Usage, "`") {
			t.Errorf("--%s usage has a backquote, which pflag takes for the value's name", f.Flag)
		}
	}
	for name := range declared {
		t.Errorf("flag --%s is not in Fields", name)
	}

	d := DefaultConfig()
	if d.Scale != 10 || d.Iterations != 10 || d.IterationsAuto || d.Duration != 60*time.Second || d.Alpha != 0.05 || d.Mode != "select-only" ||
		d.Threads != "auto" || d.Protocol != "simple" || d.Restart != RestartNever || d.Order != OrderAlternate || !reflect.DeepEqual(d.Clients, []int{1}) ||
		!d.WarmupAuto || d.Warmup != 15*time.Second || d.SamplingRate != "auto" {
		t.Errorf("DefaultConfig = %+v, want the table's defaults", d)
	}
	// Every flag is written; the adaptive ones with iterations auto,
	// warehouses when there are some.
	d.SeedSet, d.OutDir, d.DataDir, d.Warehouses = true, "/o", "/d", 3
	d.IterationsAuto, d.TargetCIPct, d.MinIterations, d.MaxIterations = true, 1, 6, 30
	d.Variants = []Variant{{Name: "a", BinDir: "/b", Settings: map[string]string{"k": "v"}}}
	d.Settings = map[string]string{"k": "v"}
	d.ClientHost, d.ClientHostKey, d.ClientBinDir, d.ClientKeyFile = "h", "SHA256:k", "/c", "-"
	written := map[string]bool{}
	for _, a := range d.Args() {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		written[name] = true
	}
	for _, f := range Fields {
		if f.Flag != "" && !written[f.Flag] {
			t.Errorf("Args does not write --%s", f.Flag)
		}
	}
	if f := FieldByAttribute("workload.scale"); f.Flag != "scale" || f.Default != "10" {
		t.Errorf("FieldByAttribute(workload.scale) = %+v, want --scale, default 10", f)
	}
}

func TestKey(t *testing.T) {
	base := func() *Config {
		c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x", Settings: map[string]string{"work_mem": "4MB"}}, {Name: "b", BinDir: "/x"}},
			Settings: map[string]string{"fsync": "off"}, Scale: 1, Clients: []int{1, 4}, Duration: time.Second, Iterations: 5}
		c.Defaults()
		return c
	}
	key := base().Key()
	if len(key) != 16 || base().Key() != key {
		t.Fatalf("Key = %q, %q: want the same 16 hex digits for the same definition", key, base().Key())
	}
	moved := base()
	moved.OutDir, moved.DataDir = "/elsewhere", "/data"
	if moved.Key() != key {
		t.Errorf("Key changed with where the campaign is kept")
	}
	// Alpha changes the verdicts, not the measurement: the same campaign
	// is recomputed at another alpha, not measured again.
	other := base()
	other.Alpha = 0.01
	if other.Key() != key {
		t.Errorf("Key changed with alpha")
	}
	// How the client host is reached (its key file, the host key it
	// presents) is not what the campaign is; the host and its bin dir are.
	client := func() *Config {
		c := base()
		c.ClientHost, c.ClientHostKey, c.ClientBinDir = "root@10.0.0.2:22", "SHA256:one", "/c/bin"
		return c
	}
	reached := client()
	reached.ClientHostKey, reached.ClientKeyFile = "SHA256:two", "/root/.ssh/id_ed25519"
	if reached.Key() != client().Key() {
		t.Errorf("Key changed with the client host's key file or host key")
	}
	if client().Key() == key {
		t.Errorf("Key did not change with a client host")
	}
	for name, change := range map[string]func(*Config){
		"variant setting": func(c *Config) { c.Variants[0].Settings["work_mem"] = "8MB" },
		"variant bin":     func(c *Config) { c.Variants[1].BinDir = "/y" },
		"huge pages":      func(c *Config) { c.Variants[1].HugePages = "on" },
		"variant order":   func(c *Config) { c.Variants[0], c.Variants[1] = c.Variants[1], c.Variants[0] },
		"shared setting":  func(c *Config) { c.Settings["fsync"] = "on" },
		"mode":            func(c *Config) { c.Mode = "tpcb" },
		"scale":           func(c *Config) { c.Scale = 2 },
		"warehouses":      func(c *Config) { c.Mode, c.Warehouses = ModeTPCC, 2 },
		"clients":         func(c *Config) { c.Clients = []int{4, 1} },
		"threads":         func(c *Config) { c.Threads = "2" },
		"duration":        func(c *Config) { c.Duration = 2 * time.Second },
		"iterations":      func(c *Config) { c.Iterations = 6 },
		"protocol":        func(c *Config) { c.Protocol = "prepared" },
		"warmup":          func(c *Config) { c.Warmup = time.Second },
		"client bin dir":  func(c *Config) { c.ClientHost, c.ClientBinDir = "h", "/c" },
		"checkpoint":      func(c *Config) { c.CheckpointBefore = true },
		"restart":         func(c *Config) { c.Restart = RestartRun },
		"order":           func(c *Config) { c.Order = OrderRandomized },
		"seed":            func(c *Config) { c.SeedSet = true },
		"server numa":     func(c *Config) { c.ServerNUMA = "cpunodebind=0" },
		"client numa":     func(c *Config) { c.ClientNUMA = "cpunodebind=0" },
		"sampling rate":   func(c *Config) { c.SamplingRate = "1" },
		"clone":           func(c *Config) { c.Clone = true },
		"counters":        func(c *Config) { c.Counters = true },
		"wait sampling":   func(c *Config) { c.WaitSampleInterval = time.Second },
		"profile":         func(c *Config) { c.Profile = ProfileEveryRun },
		"profile rate":    func(c *Config) { c.ProfileFrequency = 99 },
	} {
		c := base()
		change(c)
		if c.Key() == key {
			t.Errorf("Key did not change with %s", name)
		}
	}
}

func TestSeedFromDefinition(t *testing.T) {
	c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Scale: 1, Clients: []int{1}, Duration: time.Second,
		Iterations: 5, Order: OrderRandomized}
	c.Defaults()
	d := *c
	c.SeedFromDefinition()
	d.SeedFromDefinition()
	if !c.SeedSet || c.Seed != d.Seed || c.Seed < 0 {
		t.Fatalf("derived seeds = %d (set %v) and %d, want one non-negative seed, set", c.Seed, c.SeedSet, d.Seed)
	}
	e := d
	e.SeedSet, e.Scale = false, 2
	e.SeedFromDefinition()
	if e.Seed == c.Seed {
		t.Errorf("seed did not change with the definition")
	}
	given := d
	given.Seed = 42
	given.SeedFromDefinition()
	if given.Seed != 42 {
		t.Errorf("SeedFromDefinition replaced a given seed: %d", given.Seed)
	}
	alt := Config{Order: OrderAlternate}
	alt.SeedFromDefinition()
	if alt.SeedSet {
		t.Errorf("SeedFromDefinition seeded an alternate order")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate after SeedFromDefinition = %v", err)
	}
}
