package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/profile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

const systemBinDir = "/usr/lib/postgresql/15/bin"

func TestAccPostgresBuildSystem(t *testing.T) {
	testhost.RequireCommand(t, "postgres", systemBinDir)
	runner := installRunner(t)
	before := map[string]time.Time{}
	for _, name := range []string{"postgres", "pg_ctl", "initdb", "pgbench"} {
		fi, err := os.Stat(filepath.Join(systemBinDir, name))
		if err != nil {
			testhost.Skip(t, "system PostgreSQL incomplete: %v", err)
		}
		before[name] = fi.ModTime()
	}
	config := fmt.Sprintf(`
resource "pgbench_postgres_build" "test" {
  host_connection = %s
  source {
    system = %q
  }
}
`, localConnectionHCL(runner), systemBinDir)
	const addr = "pgbench_postgres_build.test"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for name, mt := range before {
				fi, err := os.Stat(filepath.Join(systemBinDir, name))
				if err != nil {
					return fmt.Errorf("after destroy: %v, want %s untouched", err, name)
				}
				if !fi.ModTime().Equal(mt) {
					return fmt.Errorf("after destroy: %s modified at %v, want %v", name, fi.ModTime(), mt)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bin_dir"), knownvalue.StringExact(systemBinDir)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("prefix"), knownvalue.StringExact(filepath.Dir(systemBinDir))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("version"), knownvalue.StringRegexp(regexp.MustCompile(`^15\.\d+$`))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("build_key"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// A bin directory without the programs a campaign needs fails at apply with
// the names of what is missing.
func TestAccPostgresBuildSystemIncomplete(t *testing.T) {
	runner := installRunner(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "postgres"), []byte("#!/bin/sh\necho 'postgres (PostgreSQL) 15.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "pgbench_postgres_build" "test" {
  host_connection = %s
  source {
    system = %q
  }
}
`, localConnectionHCL(runner), dir),
			ExpectError: regexp.MustCompile(`(?s)PostgreSQL Installation Not Usable.*has no initdb,\s+pg_ctl,\s+pgbench,\s+psql\s+executables`),
		}},
	})
}

// One real build from the release tarball CI fetches, into a new prefix:
// every phase runs, and through `ccache` the compiler's work and
// configure's answers come from the test builds' shared ccache (the pgbuild
// tests build the same sources with the same flags first). How the build is
// made (jobs, ccache) then changes in place, without building again.
func TestAccPostgresBuildTarball(t *testing.T) {
	tb := pgbuildtest.Tarball(t)
	testhost.RequireRoot(t)
	pgbuildtest.RequireTools(t)
	testhost.RequireCommand(t, "ccache")
	_, ccacheDir := pgbuildtest.Cache(t)
	runner := installRunner(t)
	prefix := filepath.Join(t.TempDir(), "pg")
	// terraform runs in its own working directory: give file() an absolute path.
	patch, err := filepath.Abs("../internal/pgbuild/testdata/bgwriter-delay.patch")
	if err != nil {
		t.Fatal(err)
	}
	config := func(how string) string {
		return fmt.Sprintf(`
resource "pgbench_postgres_build" "test" {
  host_connection = %s
  source {
    tarball = %q
  }
  patches         = [file(%q)]
  configure_flags = %s
  cflags          = %q
  profiling       = true
  prefix          = %q
  %s
}
`, localConnectionHCL(runner), tb, patch, pgbuildtest.ConfigureFlagsHCL(), pgbuildtest.OptFlags, prefix, how)
	}
	through := fmt.Sprintf("ccache = true\n  ccache_dir = %q", ccacheDir)
	var seconds float64
	const addr = "pgbench_postgres_build.test"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(prefix); !os.IsNotExist(err) {
				return fmt.Errorf("prefix %s after destroy: stat err = %v, want not exist", prefix, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config(through),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("prefix"), knownvalue.StringExact(prefix)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bin_dir"), knownvalue.StringExact(filepath.Join(prefix, "bin"))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("version"), knownvalue.StringRegexp(regexp.MustCompile(`^15\.\d+$`))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("build_seconds"), knownvalue.Float64Func(func(v float64) error {
						seconds = v
						return nil
					})),
				},
				Check: func(*terraform.State) error {
					// ccache reached the build: its log names configure's
					// results, reused from the pgbuild tests' build or kept.
					log, err := os.ReadFile(prefix + ".log")
					if err != nil {
						return err
					}
					if !regexp.MustCompile(`==> \[configure\] (reusing the results of an earlier configure|kept \d+ configure results)`).Match(log) {
						return fmt.Errorf("the build log %s.log does not name configure's kept results: built without ccache?", prefix)
					}
					for _, name := range []string{"postgres", "pg_ctl", "initdb", "pgbench"} {
						if _, err := os.Stat(filepath.Join(prefix, "bin", name)); err != nil {
							return fmt.Errorf("built %s: %v", name, err)
						}
					}
					// profiling: frame pointers and symbols, which perf's
					// cheap unwinding needs.
					out, err := exec.Command(filepath.Join(prefix, "bin", "pg_config"), "--cflags").Output()
					if err != nil {
						return fmt.Errorf("pg_config --cflags: %v", err)
					}
					if !strings.Contains(string(out), "-fno-omit-frame-pointer") || !strings.Contains(string(out), "-g") {
						return fmt.Errorf("a profiling build's CFLAGS are %q, want -g -fno-omit-frame-pointer", strings.TrimSpace(string(out)))
					}
					if u := profile.UnwindFor(context.Background(), filepath.Join(prefix, "bin")); u != profile.UnwindFP {
						return fmt.Errorf("unwinding for the profiling build: %s, want fp", u)
					}
					return nil
				},
			},
			{
				Config:           config(through),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// How it is built changes in place: the same build stays.
				Config: config("jobs = 1\n  install_deps = false"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("build_seconds"), knownvalue.Float64Func(func(v float64) error {
						if v != seconds {
							return fmt.Errorf("build_seconds %g after the update, want the first build's %g", v, seconds)
						}
						return nil
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ccache"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("jobs"), knownvalue.Int64Exact(1)),
				},
			},
		},
	})
}

func TestPostgresBuildValidation(t *testing.T) {
	conn := `host_connection = { mode = "local", runner_path = "/nonexistent/pgbench-runner" }`
	tests := []struct {
		name, body, want string
	}{
		{"no source block", ``, `(?s)Missing Source.*Add a source block`},
		{"empty source", "source {}", `(?s)Missing Source.*none\s+is set`},
		{"two sources", "source {\n    tarball = \"/tmp/pg.tar.bz2\"\n    system = \"/usr/lib/postgresql/15/bin\"\n  }", `(?s)Conflicting Sources.*line \d+.*system = .*more than one`},
		{"git without ref", "source {\n    git = \"https://git.postgresql.org/git/postgresql.git\"\n  }", `(?s)Git Needs A Ref`},
		{"sha256 without tarball", "source {\n    system = \"/usr/lib/postgresql/15/bin\"\n    sha256 = \"00\"\n  }", `(?s)Checksum Without Tarball`},
		{"patches with system", "source {\n    system = \"/usr/lib/postgresql/15/bin\"\n  }\n  patches = [\"x\"]", `(?s)Nothing To Build.*patches\s+does not apply`},
		{"relative system", "source {\n    system = \"bin\"\n  }", `(?s)Relative Bin Directory`},
		{"zero jobs", "source {\n    tarball = \"/tmp/pg.tar.bz2\"\n  }\n  jobs = 0", `(?s)Invalid Jobs.*jobs is 0`},
		{"ccache_dir without ccache", "source {\n    tarball = \"/tmp/pg.tar.bz2\"\n  }\n  ccache_dir = \"/srv/ccache\"", `(?s)ccache Not Used.*set ccache = true`},
		{"relative ccache_dir", "source {\n    tarball = \"/tmp/pg.tar.bz2\"\n  }\n  ccache = true\n  ccache_dir = \"ccache\"", `(?s)Relative ccache Directory`},
		{"ccache with system", "source {\n    system = \"/usr/lib/postgresql/15/bin\"\n  }\n  ccache = true", `(?s)Nothing To Build.*ccache\s+does not apply`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      fmt.Sprintf("resource \"pgbench_postgres_build\" \"test\" {\n  %s\n  %s\n}\n", conn, tt.body),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tt.want),
				}},
			})
		})
	}
}

// The build's command line, asserted without running it.
func TestPostgresBuildArgs(t *testing.T) {
	null := types.StringNull()
	tarball := postgresBuildModel{
		Source:      &buildSourceModel{Tarball: types.StringValue("/src/pg.tar.bz2"), SHA256: types.StringValue("abc"), Git: null, Ref: null, System: null},
		CFlags:      types.StringValue("-O2"),
		Profiling:   types.BoolValue(true),
		Jobs:        types.Int64Value(4),
		InstallDeps: types.BoolValue(true),
		CCache:      types.BoolValue(true),
		CCacheDir:   types.StringValue("/srv/ccache"),
		Prefix:      types.StringUnknown(),
	}
	got := strings.Join(tarball.buildArgs([]string{"/r/patches/0-a.patch"}, []string{"--with-libnuma"}), " ")
	want := "build --tarball /src/pg.tar.bz2 --sha256 abc --patch /r/patches/0-a.patch --configure-flag=--with-libnuma --cflags=-O2 --profiling --jobs 4 --install-deps --ccache --ccache-dir /srv/ccache"
	if got != want {
		t.Errorf("tarball args = %q, want %q", got, want)
	}
	git := postgresBuildModel{
		Source:    &buildSourceModel{Tarball: null, SHA256: null, Git: types.StringValue("https://x/pg.git"), Ref: types.StringValue("REL_17_0"), System: null},
		CFlags:    null,
		Jobs:      types.Int64Null(),
		Prefix:    types.StringValue("/opt/pg"),
		Profiling: types.BoolNull(), InstallDeps: types.BoolNull(),
	}
	got = strings.Join(git.buildArgs(nil, nil), " ")
	if want := "build --git https://x/pg.git --ref REL_17_0 --prefix /opt/pg"; got != want {
		t.Errorf("git args = %q, want %q", got, want)
	}
	system := postgresBuildModel{Source: &buildSourceModel{Tarball: null, SHA256: null, Git: null, Ref: null, System: types.StringValue("/usr/lib/postgresql/15/bin")}, CFlags: null, Jobs: types.Int64Null(), Prefix: null}
	got = strings.Join(system.buildArgs(nil, nil), " ")
	if want := "build --system /usr/lib/postgresql/15/bin"; got != want {
		t.Errorf("system args = %q, want %q", got, want)
	}
}
