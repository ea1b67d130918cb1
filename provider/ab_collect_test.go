package provider

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

func TestABLocalDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ localDir, want string }{
		{"", filepath.Join(wd, "pgbench-results", "k123")},
		{"out/here", filepath.Join(wd, "out", "here")},
		{"/abs/dir/", "/abs/dir"},
	}
	for _, c := range cases {
		got, err := abLocalDir(c.localDir, "k123")
		if err != nil || got != c.want {
			t.Errorf("abLocalDir(%q) = %q, %v; want %q", c.localDir, got, err, c.want)
		}
	}
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
