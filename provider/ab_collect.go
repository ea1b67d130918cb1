package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// A finished campaign's report comes home: into local_dir on the machine
// running Terraform, where it outlives the host (an EC2 instance takes its
// disks with it). The runner packs the raw logs and lists the files with
// their digests (`report OUT --manifest`); each file is streamed into a
// partial directory, checked against the host's sha256, and renamed into
// place, results.json last, so a directory with results.json holds a
// complete, verified report.

// abResultsRoot is where reports go when local_dir is not set, relative to
// Terraform's working directory.
const abResultsRoot = "pgbench-results"

// progressLogFile is the live log of a campaign in its local directory.
const progressLogFile = "progress.log"

// historyFile, beside the collected campaign directories, has a JSON line
// per comparison of every campaign collected there (report.HistoryEntry);
// `pgbench-runner history` prints it.
const historyFile = "history.jsonl"

// abLocalDir is the local directory of the campaign with key: local_dir as
// given, or pgbench-results/<key>, made absolute.
func abLocalDir(localDir, key string) (string, error) {
	d := localDir
	if d == "" {
		d = filepath.Join(abResultsRoot, key)
	}
	return filepath.Abs(d)
}

// collectReport fetches the report of the campaign in remoteDir on the
// host into localDir and returns each file's sha256 by name. Files of an
// earlier collection that the report no longer has are left alone.
func collectReport(ctx context.Context, conn connectionModel, ex remote.Executor, remoteDir, localDir string, logf func(string)) (map[string]string, error) {
	var m campaign.Manifest
	if err := conn.runner(ex).Run(ctx, &m, "report", remoteDir, "--manifest"); err != nil {
		return nil, fmt.Errorf("list the report of %s: %w", remoteDir, err)
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("the report of %s lists no files", remoteDir)
	}
	if err := os.MkdirAll(localDir, 0o755); err != nil {
		return nil, err
	}
	partial, err := os.MkdirTemp(localDir, ".partial-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(partial)
	var total int64
	for _, f := range m.Files {
		total += f.Bytes
	}
	start := time.Now()
	var got int64
	for _, f := range m.Files {
		if !reportName(f.Name) {
			return nil, fmt.Errorf("the report of %s lists %q, which is not a file name", remoteDir, f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(partial, f.Name)), 0o755); err != nil {
			return nil, err
		}
		if err := downloadVerified(ctx, ex, remoteDir+"/"+f.Name, filepath.Join(partial, f.Name), f, func(n int64) {
			logf(fmt.Sprintf("collecting %s: %s of %s", f.Name, byteCount(got+n), byteCount(total)))
		}); err != nil {
			return nil, err
		}
		got += f.Bytes
	}
	// An earlier collection's results.json goes first, so that until the
	// new one is in place the directory does not pass for complete.
	if err := os.Remove(filepath.Join(localDir, "results.json")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	sums := map[string]string{}
	for _, f := range m.Files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(localDir, f.Name)), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(partial, f.Name), filepath.Join(localDir, f.Name)); err != nil {
			return nil, err
		}
		sums[f.Name] = f.SHA256
	}
	if err := atomicfile.SyncDir(localDir); err != nil {
		return nil, err
	}
	logf(fmt.Sprintf("collected %d files, %s, in %s into %s", len(m.Files), byteCount(total), time.Since(start).Round(time.Millisecond), localDir))
	return sums, nil
}

// reportName says a manifest's name is one a report has: a plain file
// name, or one inside the profiles directory.
func reportName(name string) bool {
	dir, base := filepath.Split(name)
	return filepath.IsLocal(name) && base != "" && (dir == "" || dir == campaign.ProfilesDir+"/") && filepath.Base(base) == base
}

// downloadVerified streams remotePath into localPath and checks its size
// and digest against want; a file that does not match is removed.
func downloadVerified(ctx context.Context, ex remote.Executor, remotePath, localPath string, want campaign.ReportFile, progress func(int64)) error {
	f, err := os.OpenFile(localPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	pw := &progressWriter{w: f, every: 16 << 20, fn: progress}
	res, err := remote.Download(ctx, ex, remotePath, pw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && (res.Bytes != want.Bytes || res.SHA256 != want.SHA256) {
		err = fmt.Errorf("%s arrived as %d bytes with sha256 %s; the host has %d bytes with sha256 %s", remotePath, res.Bytes, res.SHA256, want.Bytes, want.SHA256)
	}
	if err != nil {
		os.Remove(localPath)
		return err
	}
	return nil
}

// progressWriter calls fn with the bytes written so far every `every`
// bytes, for transfers large enough to need it.
type progressWriter struct {
	w     *os.File
	n     int64
	next  int64
	every int64
	fn    func(int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	if p.n >= p.next+p.every {
		p.next = p.n
		p.fn(p.n)
	}
	return n, err
}

func byteCount(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// progressLog is a campaign's live progress.log in its local directory: a
// line per run (elapsed, ETA, TPS), per phase and per collection step,
// each written and flushed as it happens, so `tail -f` follows an apply
// without TF_LOG.
type progressLog struct {
	ctx context.Context
	mu  sync.Mutex
	f   *os.File
}

// openProgressLog opens (appending) dir/progress.log; a log that cannot be
// opened is reported to the Terraform log and the campaign goes on.
func openProgressLog(ctx context.Context, dir string) *progressLog {
	p := &progressLog{ctx: ctx}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tflog.Warn(ctx, "no progress.log", map[string]any{"error": err.Error()})
		return p
	}
	f, err := os.OpenFile(filepath.Join(dir, progressLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		tflog.Warn(ctx, "no progress.log", map[string]any{"error": err.Error()})
		return p
	}
	p.f = f
	return p
}

// line appends one line, time-stamped.
func (p *progressLog) line(s string) {
	if p == nil || p.f == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), s)
}

func (p *progressLog) Close() {
	if p != nil && p.f != nil {
		p.f.Close()
	}
}
