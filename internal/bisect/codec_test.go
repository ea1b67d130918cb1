package bisect

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// fullConfig sets every field of a bisect, awkward values included.
func fullConfig() *Config {
	c := DefaultConfig()
	c.GitURL = "https://git.example.org/postgresql.git"
	c.Good, c.Bad = "REL_16_0", "a1b2c3d4e5f6"
	c.Direction = DirectionImprovement
	c.StepRounds = 5
	c.Build.Patches = []string{"/opt/p/one.patch", "/opt/p/two, three.patch"}
	c.Build.ConfigureFlags = []string{"--with-libnuma", "--without-icu"}
	c.Build.CFlags = "-O2 -march=native"
	c.Build.Jobs = 3
	c.Build.Root = "/srv/builds"
	c.Build.CCacheDir = ""
	c.GitCache = "/srv/git"
	c.Campaign.Settings = map[string]string{"shared_buffers": "1GB", "custom.note": "a=b, c;d"}
	c.Campaign.Mode, c.Campaign.Scale, c.Campaign.Clients = "tpcb", 100, []int{1, 16}
	c.Campaign.Duration, c.Campaign.Iterations = 30*time.Second, 7
	c.Campaign.ServerNUMA = "cpunodebind=0,membind=0"
	c.Campaign.Alpha = 0.01
	c.Campaign.OutDir = "/srv/bisects/x"
	c.Defaults()
	return c
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, c := range []*Config{DefaultConfig(), fullConfig()} {
		args := c.Args()
		got, err := Decode(args)
		if err != nil {
			t.Fatalf("Decode(%q) = %v", args, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("Decode(Args()) differs:\nargs %q\ngot  %+v\nwant %+v", args, got, c)
		}
		if again := got.Args(); !slices.Equal(again, args) {
			t.Fatalf("Args of the decoded config = %q, want %q", again, args)
		}
	}
}

// The arguments the provider sends, asserted without running anything.
func TestArgs(t *testing.T) {
	got := strings.Join(fullConfig().Args(), " ")
	for _, want := range []string{
		"--git=https://git.example.org/postgresql.git --good=REL_16_0 --bad=a1b2c3d4e5f6 --direction=improvement --step-rounds=5 " +
			"--patch=/opt/p/one.patch --patch=/opt/p/two, three.patch --configure-flag=--with-libnuma --configure-flag=--without-icu --cflags=-O2 -march=native " +
			"--build-root=/srv/builds --git-cache=/srv/git --jobs=3 --ccache=false --out=/srv/bisects/x",
		"--mode=tpcb", "--scale=100", "--clients=1,16", "--alpha=0.01",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args\n%s\nwant them to contain\n%s", got, want)
		}
	}
	if strings.Contains(got, "--variant") {
		t.Errorf("args %s hold variants: the bisect makes them", got)
	}
}

func TestKey(t *testing.T) {
	base := fullConfig().Key()
	same := []func(*Config){
		func(c *Config) { c.Campaign.OutDir = "/elsewhere" },
		func(c *Config) { c.Build.Jobs = 64 },
		func(c *Config) { c.Build.CCacheDir = "/cc" },
		func(c *Config) { c.Build.Root = "/other/builds" },
		func(c *Config) { c.GitCache = "/other/git" },
	}
	for i, f := range same {
		c := fullConfig()
		f(c)
		if got := c.Key(); got != base {
			t.Errorf("change %d: key %s, want %s: where things are kept and how fast they build is not what the bisect is", i, got, base)
		}
	}
	differ := []func(*Config){
		func(c *Config) { c.Good = "REL_16_1" },
		func(c *Config) { c.Direction = DirectionRegression },
		func(c *Config) { c.StepRounds = 4 },
		func(c *Config) { c.Build.CFlags = "-O3" },
		func(c *Config) { c.Build.Patches = c.Build.Patches[:1] },
		func(c *Config) { c.Campaign.Alpha = 0.05 },
		func(c *Config) { c.Campaign.Duration = time.Minute },
	}
	for i, f := range differ {
		c := fullConfig()
		f(c)
		if got := c.Key(); got == base {
			t.Errorf("change %d: key unchanged, want a new one", i)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no repository", func(c *Config) { c.GitURL = "" }, "--git: the git repository to bisect is required"},
		{"no good", func(c *Config) { c.Good = "" }, "--good: the good commit is required"},
		{"option as ref", func(c *Config) { c.Bad = "--output=/etc/x" }, `--bad: "--output=/etc/x" is not a git ref`},
		{"same refs", func(c *Config) { c.Bad = c.Good }, `--bad: good and bad are both "REL_16_0"`},
		{"direction", func(c *Config) { c.Direction = "slower" }, `--direction: "slower", want regression`},
		{"rounds", func(c *Config) { c.StepRounds = 0 }, "--step-rounds: 0, want 1 to 10"},
		{"too few iterations", func(c *Config) { c.Campaign.Iterations = 2 }, "--iterations: 2 iterations per variant give no test"},
		{"campaign's own", func(c *Config) { c.Campaign.Mode = "nope" }, `--mode: unknown pgbench mode "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fullConfig()
			tt.edit(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tt.want)
			}
			if !campaign.IsValidation(err) {
				t.Errorf("IsValidation(%v) = false", err)
			}
		})
	}
	if err := fullConfig().Validate(); err != nil {
		t.Errorf("Validate() of a whole definition = %v", err)
	}
}

func TestDecodeRefusesVariants(t *testing.T) {
	_, err := Decode([]string{"--variant", "name=a,bin=/x"})
	fe := campaign.ValidationErrors(err)
	if len(fe) != 1 || fe[0].Path.Flag != "variant" || !strings.Contains(fe[0].Error(), "makes its own variants") {
		t.Errorf("Decode with --variant = %v, want a field error on variant", err)
	}
	if c := DefaultConfig(); c.Direction != DirectionRegression || c.StepRounds != 3 || c.Build.CCacheDir == "" || c.Campaign.Mode != "select-only" {
		t.Errorf("defaults: direction %q, rounds %d, ccache %q, mode %q", c.Direction, c.StepRounds, c.Build.CCacheDir, c.Campaign.Mode)
	}
	if f := FieldByFlag("duration"); f != campaign.FieldByFlag("duration") {
		t.Errorf("FieldByFlag(duration) = %+v, want the campaign's", f)
	}
}
