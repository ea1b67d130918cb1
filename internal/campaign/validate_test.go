package campaign

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestValidateAll checks that Validate reports every fault at once, each
// with the path of the field at fault and the fields the check read.
func TestValidateAll(t *testing.T) {
	c := &Config{
		Variants: []Variant{
			{Name: "a", BinDir: "/x", Settings: map[string]string{"huge_pages": "on"}},
			{Name: strings.Repeat("x", MaxVariantName+1), BinDir: "/x", HugePages: "maybe"},
			{Name: "a", BinDir: ""},
		},
		Settings: map[string]string{"bad name": "1"},
		Mode:     "tpcb", Script: "/s.sql", Scale: 0, Clients: []int{4, 0, 4}, Threads: "x", Duration: 0,
		Iterations: 0, Warmup: time.Millisecond, Protocol: "binary", Restart: "sometimes", Order: OrderAlternate,
		SeedSet: true, ServerNUMA: "nodes=0", ClientNUMA: "cpunodebind", SamplingRate: "0", Alpha: 0.7,
	}
	c.Defaults()
	type found struct {
		path  string
		title string
		uses  []string
	}
	var got []found
	for _, ve := range ValidationErrors(c.Validate()) {
		p := ve.Path
		s := p.Flag
		if p.Index >= 0 {
			s += fmt.Sprintf("[%d]", p.Index)
		}
		if p.Part != "" {
			s += "." + p.Part
		}
		if p.Key != "" {
			s += fmt.Sprintf("[%q]", p.Key)
		}
		got = append(got, found{s, ve.Title, ve.Uses})
	}
	want := []found{
		{`variant[0].settings["huge_pages"]`, "Huge Pages In Settings", nil},
		{"variant[1].name", "Invalid Variant Name", nil},
		{"variant[1].huge_pages", "Invalid Huge Pages Setting", nil},
		{"variant[2].name", "Duplicate Variant Name", nil},
		{"variant[2].bin_dir", "Missing Bin Dir", nil},
		{`set["bad name"]`, "Invalid Setting Name", nil},
		{"script", "Script Without Custom Mode", []string{"mode"}},
		{"scale", "Invalid Scale", nil},
		{"clients[1]", "Invalid Client Count", nil},
		{"clients[2]", "Duplicate Client Count", nil},
		{"threads", "Invalid Threads", nil},
		{"duration", "Invalid Duration", nil},
		{"warmup", "Invalid Duration", nil},
		{"iterations", "Invalid Iterations", nil},
		{"protocol", "Invalid Protocol", nil},
		{"restart", "Invalid Restart", nil},
		{"seed", "Seed Without Randomized Order", []string{"order"}},
		{"server-numa", "Invalid NUMA Pinning", nil},
		{"client-numa", "Invalid NUMA Pinning", nil},
		{"sampling-rate", "Invalid Sampling Rate", nil},
		{"alpha", "Invalid Alpha", nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors =\n%v\nwant\n%v", got, want)
	}
}

// TestValidateTPCC checks what only a TPC-C campaign asks, and the
// connections any campaign needs.
func TestValidateTPCC(t *testing.T) {
	base := func() *Config {
		c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Mode: ModeTPCC, Warehouses: 4,
			Clients: []int{8, 32}, Duration: time.Minute, Iterations: 5}
		c.Defaults()
		return c
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("a valid TPC-C campaign: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // the error's flag path and text
	}{
		{"no warehouses", func(c *Config) { c.Warehouses = 0 }, "--warehouses: 0: --mode tpcc needs a dataset of at least 1 warehouse"},
		{"negative warehouses", func(c *Config) { c.Warehouses = -3 }, "--warehouses: -3: --mode tpcc needs"},
		{"warehouses without tpcc", func(c *Config) { c.Mode, c.Scale = "select-only", 10 }, `--warehouses: only with --mode tpcc; --mode is "select-only"`},
		{"pgbench threads", func(c *Config) { c.Threads = "4" }, `--threads: "4": --threads applies to pgbench modes only`},
		{"pgbench protocol", func(c *Config) { c.Protocol = "prepared" }, "--protocol applies to pgbench modes only"},
		{"shared max_connections", func(c *Config) { c.Settings["max_connections"] = "20" },
			"--set: variant a: max_connections = 20 cannot take 32 clients and the runner's 2 own connections: raise max_connections to at least 34"},
		{"a variant's max_connections", func(c *Config) { c.Variants[1].Settings["max_connections"] = "33" },
			"--variant: variant b: max_connections = 33 cannot take 32 clients"},
		{"max_connections not a number", func(c *Config) { c.Settings["max_connections"] = "many" }, `max_connections = "many" is not a number`},
	} {
		c := base()
		tc.change(c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// Enough connections, and the variant's own setting winning over the shared one.
	c := base()
	c.Settings["max_connections"] = "10"
	c.Variants[0].Settings["max_connections"], c.Variants[1].Settings["max_connections"] = "34", "100"
	if err := c.Validate(); err != nil {
		t.Errorf("max_connections 34 and 100 for 32 clients: %v", err)
	}
}

// TestValidationErrorText renders the same error for the runner (flags)
// and for another reader (here, upper-cased names).
func TestValidationErrorText(t *testing.T) {
	c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Mode: "custom", Scale: 1, Clients: []int{1},
		Duration: time.Second, Iterations: 1, SeedSet: true}
	c.Defaults()
	errs := ValidationErrors(c.Validate())
	var runner, other []string
	for _, e := range errs {
		runner = append(runner, e.Error())
		other = append(other, e.Text(func(p Path) string { return strings.ToUpper(p.Flag) }))
	}
	want := []string{"--script: --mode custom needs --script, the path of the pgbench script on the host", "--seed only applies to --order randomized"}
	if !reflect.DeepEqual(runner, want) {
		t.Errorf("runner messages = %q, want %q", runner, want)
	}
	want = []string{"SCRIPT: MODE custom needs SCRIPT, the path of the pgbench script on the host", "SEED only applies to ORDER randomized"}
	if !reflect.DeepEqual(other, want) {
		t.Errorf("messages = %q, want %q", other, want)
	}
	// A reader that does not show the field at fault gets the message
	// alone; the fields it refers to keep their names.
	e := Invalid(at("sampling-rate"), "Not A TPC-C Setting", "%q: leave it with %s %s", "0.5", ref("mode"), ModeTPCC)
	hidden := func(p Path) string {
		if p.Flag == "sampling-rate" {
			return ""
		}
		return strings.ToUpper(p.Flag)
	}
	if got, want := e.Text(hidden), `"0.5": leave it with MODE tpcc`; got != want {
		t.Errorf("Text without the field's name = %q, want %q", got, want)
	}
	if got, want := e.Error(), `--sampling-rate: "0.5": leave it with --mode tpcc`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(e.Uses, []string{"mode"}) {
		t.Errorf("Uses = %q, want [mode]", e.Uses)
	}
}

func TestValidateSamplingRate(t *testing.T) {
	for rate, ok := range map[string]bool{
		"auto": true, "1": true, "0.5": true, "1e-4": true, "0.000001": true,
		"0": false, "-0.1": false, "1.5": false, "NaN": false, "Inf": false, "half": false, "Auto": false, "10%": false,
	} {
		c := &Config{Variants: []Variant{{Name: "a", BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Scale: 1, Clients: []int{1},
			Duration: time.Second, Iterations: 1, SamplingRate: rate}
		c.Defaults()
		errs := ValidationErrors(c.Validate())
		if ok {
			if len(errs) > 0 {
				t.Errorf("sampling rate %q: Validate = %v, want nil", rate, errs)
			}
			continue
		}
		want := fmt.Sprintf("--sampling-rate: %q, want a fraction in (0, 1] or auto", rate)
		if len(errs) != 1 || errs[0].Path != at("sampling-rate") || errs[0].Error() != want {
			t.Errorf("sampling rate %q: Validate = %v, want one error %q", rate, errs, want)
		}
	}
}

func TestVariantNameLimit(t *testing.T) {
	for n, ok := range map[int]bool{MaxVariantName: true, MaxVariantName + 1: false} {
		c := &Config{Variants: []Variant{{Name: strings.Repeat("v", n), BinDir: "/x"}, {Name: "b", BinDir: "/x"}}, Scale: 1, Clients: []int{1},
			Duration: time.Second, Iterations: 1}
		c.Defaults()
		err := c.Validate()
		if (err == nil) != ok {
			t.Errorf("name of %d characters: Validate = %v, want ok %v", n, err, ok)
		}
	}
}

func TestCheckHost(t *testing.T) {
	bin := fakeBinDir(t)
	c := &Config{Variants: []Variant{{Name: "a", BinDir: bin}, {Name: "b", BinDir: t.TempDir()}}, Script: "/nonexistent/x.sql"}
	var got []string
	for _, e := range ValidationErrors(c.CheckHost()) {
		got = append(got, e.Error())
	}
	want := []string{
		"--out is required",
		"--variant: variant b: bin dir " + c.Variants[1].BinDir + " has no postgres, initdb, pg_ctl, pgbench, psql executables",
		"--script: stat /nonexistent/x.sql: no such file or directory",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CheckHost =\n%q\nwant\n%q", got, want)
	}
	c.OutDir, c.Variants[1].BinDir, c.Script = t.TempDir(), bin, ""
	if err := c.CheckHost(); err != nil {
		t.Errorf("CheckHost(complete) = %v, want nil", err)
	}
}
