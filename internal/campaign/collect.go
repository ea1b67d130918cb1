package campaign

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// What a campaign's report is, for whoever takes it home: the plain files
// at the top of its directory (journal, results.json/csv, summary.md, the
// benchstat files, the chart, sysinfo.json), the profiles and flame graphs
// in ProfilesDir, and the raw per-run logs packed
// in one archive, LogsArchive. The data directories and the lock are not
// part of it.

// LogsArchive is the archive of a campaign's runs directory that
// CollectManifest packs.
const LogsArchive = "logs.tar.gz"

// RunsDir holds one directory of raw pgbench output and logs per run.
const RunsDir = "runs"

// ReportFile is one file of a campaign's report.
type ReportFile struct {
	Name   string `json:"name"` // relative to the campaign directory
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest lists a campaign's report files.
type Manifest struct {
	Dir   string       `json:"dir"`
	Files []ReportFile `json:"files"`
}

// CollectManifest packs the raw logs of the campaign in dir into
// dir/LogsArchive (again, so it holds every run) and lists the report's
// files with their sizes and digests, results.json last: a collector that
// fetches in this order and renames each file into place has a complete
// report exactly when results.json is there.
func CollectManifest(dir string) (*Manifest, error) {
	if _, err := os.Stat(filepath.Join(dir, report.ResultsJSONFile)); err != nil {
		return nil, fmt.Errorf("campaign %s has no %s: it has not finished (run it, or resume it, first)", dir, report.ResultsJSONFile)
	}
	if st, err := os.Stat(filepath.Join(dir, RunsDir)); err == nil && st.IsDir() {
		err := atomicfile.Write(filepath.Join(dir, LogsArchive), 0o644, func(w io.Writer) error {
			return writeTarGz(w, dir, []string{RunsDir})
		})
		if err != nil {
			return nil, fmt.Errorf("pack the raw logs of %s: %w", dir, err)
		}
	}
	names, err := reportFileNames(dir)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Dir: dir}
	for _, n := range names {
		p := filepath.Join(dir, n)
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		sum, err := digest.FileSHA256(p)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, ReportFile{Name: n, Bytes: st.Size(), SHA256: sum})
	}
	return m, nil
}

// reportFileNames are the regular files at the top of a campaign directory
// that make its report, sorted, results.json last. Hidden files (the lock,
// temporary files of a write in progress) are not.
func reportFileNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list the report of %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || e.Name() == report.ResultsJSONFile {
			continue
		}
		names = append(names, e.Name())
	}
	// The profiles and flame graphs of a profiled campaign come too.
	if sub, err := os.ReadDir(filepath.Join(dir, ProfilesDir)); err == nil {
		for _, e := range sub {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, ProfilesDir+"/"+e.Name())
			}
		}
	}
	sort.Strings(names)
	return append(names, report.ResultsJSONFile), nil
}

// WriteArchive writes the whole report of the campaign in dir, plain files
// and raw logs, as one gzip-compressed tar to w, its entries under a
// directory named after the campaign's.
func WriteArchive(w io.Writer, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, report.ResultsJSONFile)); err != nil {
		return fmt.Errorf("campaign %s has no %s: it has not finished (run it, or resume it, first)", dir, report.ResultsJSONFile)
	}
	names, err := reportFileNames(dir)
	if err != nil {
		return err
	}
	// The runs go in as they are, not packed a second time.
	names = slices.DeleteFunc(names, func(n string) bool { return n == LogsArchive })
	if st, err := os.Stat(filepath.Join(dir, RunsDir)); err == nil && st.IsDir() {
		names = append(names, RunsDir)
	}
	return writeTarGz(w, dir, names)
}

// writeTarGz writes the named files and directory trees under root as a
// gzip-compressed tar whose entries are prefixed by root's base name.
func writeTarGz(w io.Writer, root string, names []string) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	base := filepath.Base(root)
	for _, n := range names {
		err := filepath.WalkDir(filepath.Join(root, n), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			h, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			h.Name = filepath.ToSlash(filepath.Join(base, rel))
			if d.IsDir() {
				h.Name += "/"
			}
			h.Uname, h.Gname = "", ""
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("archive %s: %w", filepath.Join(root, n), err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
