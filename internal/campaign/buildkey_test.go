package campaign

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
)

// A variant whose bin dir is a pgbench_postgres_build prefix carries the
// build key of the prefix's stamp into results.json; an installed
// PostgreSQL carries none.
func TestResultsNameTheBuild(t *testing.T) {
	bin := needPostgres(t)
	prefix, err := os.MkdirTemp("", "campaign-build-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(prefix) })
	os.Chmod(prefix, 0o755)
	// The installed binaries stand in for a build: PostgreSQL resolves the
	// link to find its share directory.
	if err := os.Symlink(bin, filepath.Join(prefix, "bin")); err != nil {
		t.Fatal(err)
	}
	const key = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	stamp := `{"build_key":"` + key + `","prefix":"` + prefix + `","bin_dir":"` + filepath.Join(prefix, "bin") + `"}`
	if err := os.WriteFile(filepath.Join(prefix, pgbuild.StampName), []byte(stamp), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Variants: []Variant{{Name: "system", BinDir: bin, HugePages: "off"}, {Name: "built", BinDir: filepath.Join(prefix, "bin"), HugePages: "off"}},
		Settings: map[string]string{"shared_buffers": "32MB"},
		Mode:     "select-only", Scale: 1, Clients: []int{1}, Duration: time.Second, Iterations: 3,
		Alpha: 0.05, OutDir: scratch(t), Clone: true,
	}
	seedData(t, cfg, "system")
	res, err := Execute(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	back, err := readResults(filepath.Join(cfg.OutDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		got  []string
	}{{"returned", []string{res.Variants[0].BuildKey, res.Variants[1].BuildKey}}, {"results.json", []string{back.Variants[0].BuildKey, back.Variants[1].BuildKey}}} {
		if r.got[0] != "" || r.got[1] != key {
			t.Errorf("%s build keys = %q, want none for system and %s for built", r.name, r.got, key)
		}
	}
}
