package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
)

// finishedCampaign writes the files of a finished campaign directory: the
// reports at the top, a run's compressed logs, a data directory and the
// lock, which are not part of the report.
func finishedCampaign(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "c0ffee")
	files := map[string]string{
		"journal.jsonl":                          "{}\n",
		"results.json":                           `{"schema_version": 2}` + "\n",
		"results.csv":                            "seq\n",
		"summary.md":                             "| a |\n",
		"chart.svg":                              "<svg/>\n",
		"stock.txt":                              "BenchmarkTPS 1 100 tps\n",
		"sysinfo.json":                           "{}\n",
		".lock":                                  "123\n",
		"runs/0001-stock-c1-i1/stdout":           "tps = 100\n",
		"runs/0001-stock-c1-i1/pgbench_log.7.gz": "not really gzip, packed as it is",
		"data/stock/PG_VERSION":                  "15\n",
	}
	for name, body := range files {
		p := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

func TestReportManifest(t *testing.T) {
	out := finishedCampaign(t)
	code, stdout, stderr := runCapture(t, "report", out, "--manifest", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var m campaign.Manifest
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
		sum, err := digest.FileSHA256(filepath.Join(out, f.Name))
		if err != nil || sum != f.SHA256 {
			t.Errorf("%s: manifest sha256 %s, file %s (%v)", f.Name, f.SHA256, sum, err)
		}
		st, _ := os.Stat(filepath.Join(out, f.Name))
		if st == nil || st.Size() != f.Bytes {
			t.Errorf("%s: manifest %d bytes, file %v", f.Name, f.Bytes, st)
		}
	}
	want := []string{"chart.svg", "journal.jsonl", "logs.tar.gz", "results.csv", "stock.txt", "summary.md", "sysinfo.json", "results.json"}
	if !slices.Equal(names, want) {
		t.Errorf("manifest lists %q, want %q (results.json last; no lock, data or runs)", names, want)
	}
	logs := tarNames(t, filepath.Join(out, campaign.LogsArchive))
	for _, n := range []string{"c0ffee/runs/0001-stock-c1-i1/stdout", "c0ffee/runs/0001-stock-c1-i1/pgbench_log.7.gz"} {
		if !slices.Contains(logs, n) {
			t.Errorf("logs.tar.gz holds %q, want %s", logs, n)
		}
	}
}

func TestReportArchive(t *testing.T) {
	out := finishedCampaign(t)
	dest := filepath.Join(t.TempDir(), "campaign.tar.gz")
	code, stdout, stderr := runCapture(t, "report", out, "--archive", dest, "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var res archiveResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if sum, err := digest.FileSHA256(dest); err != nil || sum != res.SHA256 || res.Archive != dest {
		t.Errorf("printed %+v; file sha256 %s (%v)", res, sum, err)
	}
	names := tarNames(t, dest)
	for _, n := range []string{"c0ffee/results.json", "c0ffee/summary.md", "c0ffee/journal.jsonl", "c0ffee/sysinfo.json", "c0ffee/runs/0001-stock-c1-i1/pgbench_log.7.gz"} {
		if !slices.Contains(names, n) {
			t.Errorf("archive holds %q, want %s", names, n)
		}
	}
	for _, n := range names {
		if strings.Contains(n, "/data/") || strings.HasSuffix(n, "/.lock") || strings.HasSuffix(n, "logs.tar.gz") {
			t.Errorf("archive holds %s, which is not part of the report", n)
		}
	}
}

func TestReportBadInput(t *testing.T) {
	out := finishedCampaign(t)
	unfinished := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no directory", []string{"report", "--manifest"}, exitUsage, "want one campaign directory"},
		{"neither flag", []string{"report", out}, exitUsage, "give one of --archive FILE and --manifest"},
		{"both flags", []string{"report", out, "--manifest", "--archive", "/tmp/x.tar.gz"}, exitUsage, "give one of"},
		{"not a directory", []string{"report", filepath.Join(out, "nope"), "--manifest"}, exitUsage, "is not a campaign directory"},
		{"archive inside", []string{"report", out, "--archive", filepath.Join(out, "r.tar.gz")}, exitUsage, "inside the campaign directory"},
		{"unfinished", []string{"report", unfinished, "--manifest"}, exitFailure, "has not finished"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCapture(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.want)
			}
		})
	}
}

// TestABRemoveDataRemovesReports is what pgbench_ab_benchmark's destroy
// runs once the report is collected: data and reports go.
func TestABRemoveDataRemovesReports(t *testing.T) {
	out := finishedCampaign(t)
	code, stdout, stderr := runCapture(t, "ab", "--out", out, "--remove-data", "--remove-reports", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var v struct{ Removed []string }
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if !slices.Contains(v.Removed, out) {
		t.Errorf("removed %q, want it to name %s", v.Removed, out)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stat %s = %v, want it removed", out, err)
	}
	// Again: nothing left, nothing to do.
	if code, _, stderr := runCapture(t, "ab", "--out", out, "--remove-data", "--remove-reports"); code != exitOK {
		t.Errorf("second call: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{
		{"ab", "--out", out, "--remove-reports"},
		{"ab", "--out", out, "--remove-data", "--remove-reports", "--keep-reports-as", out + ".kept"},
	} {
		if code, _, stderr := runCapture(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d (stderr %q), want %d", args, code, stderr, exitUsage)
		}
	}
}
