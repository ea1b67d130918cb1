package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/digest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/filelock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
)

type buildCmd struct{}

func init() { register(buildCmd{}) }

func (buildCmd) Name() string { return "build" }
func (buildCmd) Synopsis() string {
	return "build PostgreSQL (stock or patched) into a cached prefix, or adopt an installed one"
}

// downloadDir keeps tarballs fetched by URL.
const downloadDir = "/var/cache/pgbench/downloads"

func (c buildCmd) Run(ctx context.Context, args []string) error {
	var o output
	fs := newFlagSet(c.Name(), c.Synopsis(), &o)
	var opts pgbuild.Options
	fs.StringVar(&opts.Tarball, "tarball", "", "release tarball: local path or http(s) URL")
	fs.StringVar(&opts.SHA256, "sha256", "", "expected sha256 of the tarball")
	fs.StringVar(&opts.GitURL, "git", "", "git repository URL (with --ref)")
	fs.StringVar(&opts.GitRef, "ref", "", "git ref to fetch (branch, tag or commit)")
	fs.StringVar(&opts.SystemBinDir, "system", "", "adopt the installed PostgreSQL in this bin directory")
	bf := pgbuild.BindFlags(fs, &opts, false)
	fs.StringVar(&opts.Prefix, "prefix", "", "install prefix (default "+pgbuild.DefaultRoot+"/<build_key[:16]>)")
	fs.DurationVar(&opts.HostWait.Limit, "wait-host", 0, waitHostUsage)
	opts.HostWait.Report = func(w hostlock.Wait) { fmt.Fprintln(o.stderr, w) }
	remove := fs.Bool("remove", false, "remove the build installed in --prefix (only a prefix holding a finished build stamp), then exit")
	expectKey := fs.String("build-key", "", "--remove: refuse unless the prefix's stamp records this build key")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return o.emit(nil, usagef("unexpected argument %q", fs.Arg(0)), nil)
	}
	if err := checkWaitHost(opts.HostWait.Limit); err != nil {
		return o.emit(nil, err, nil)
	}
	if *remove {
		if opts.Prefix == "" {
			return o.emit(nil, usagef("--remove needs --prefix"), nil)
		}
		r, err := removeBuild(opts.Prefix, *expectKey)
		return o.emit(r, err, func(w io.Writer) {
			if r.Removed {
				fmt.Fprintf(w, "removed %s\n", r.Prefix)
			} else {
				fmt.Fprintf(w, "nothing to remove: %s does not exist\n", r.Prefix)
			}
		})
	}
	n := 0
	for _, s := range []string{opts.Tarball, opts.GitURL, opts.SystemBinDir} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return o.emit(nil, usagef("give exactly one of --tarball, --git or --system"), nil)
	}
	if (opts.GitURL != "") != (opts.GitRef != "") {
		return o.emit(nil, usagef("--git and --ref go together"), nil)
	}
	if opts.SystemBinDir != "" && (len(opts.Patches) > 0 || len(opts.ConfigureFlags) > 0 || opts.CFlags != "" || bf.Profiling()) {
		return o.emit(nil, usagef("--system builds nothing: --patch, --configure-flag, --cflags and --profiling do not apply"), nil)
	}
	bf.Finish()
	if opts.SystemBinDir != "" {
		if err := checkSystemBinDir(opts.SystemBinDir); err != nil {
			return o.emit(nil, unmet(err), nil)
		}
	}
	url := ""
	if strings.HasPrefix(opts.Tarball, "http://") || strings.HasPrefix(opts.Tarball, "https://") {
		url = opts.Tarball
		p, err := download(ctx, url, opts.SHA256)
		if err != nil {
			return o.emit(nil, err, nil)
		}
		opts.Tarball = p
	}
	last := ""
	progress := func(phase, line string) {
		if phase != last {
			fmt.Fprintf(o.stderr, "==> %s\n", phase)
			last = phase
		}
		if strings.HasPrefix(line, "$ ") {
			fmt.Fprintf(o.stderr, "    %s\n", line)
		}
	}
	r, err := pgbuild.Build(ctx, opts, progress)
	var me *pgbuild.MissingToolsError
	if errors.As(err, &me) {
		err = unmet(err)
	}
	if err == nil && url != "" {
		r.Source.URL = url
	}
	return o.emit(r, err, func(w io.Writer) {
		state := "built"
		if r.Cached {
			state = "reused"
		}
		if r.Source.Kind == "system" {
			state = "adopted"
		}
		fmt.Fprintf(w, "%s PostgreSQL %s in %s (key %s, %.1fs)\n", state, r.Version, r.Prefix, r.BuildKey, r.Seconds)
		if r.LogPath != "" {
			fmt.Fprintf(w, "log: %s\n", r.LogPath)
		}
	})
}

// download fetches url into downloadDir (reusing a copy with the wanted
// sha256) and returns the local path.
func download(ctx context.Context, url, want string) (string, error) {
	if err := os.MkdirAll(downloadDir, 0o755); err != nil {
		return "", fmt.Errorf("make %s: %w", downloadDir, err)
	}
	dest := filepath.Join(downloadDir, path.Base(url))
	if want != "" {
		if sum, err := digest.FileSHA256(dest); err == nil && strings.EqualFold(sum, want) {
			return dest, nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download %s: %s", url, resp.Status)
	}
	if err := atomicfile.Write(dest, 0o600, func(w io.Writer) error {
		_, err := io.Copy(w, resp.Body)
		return err
	}); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	return dest, nil
}

// removed is the JSON of `pgbench-runner build --remove --json`.
type removed struct {
	Prefix   string `json:"prefix"`
	Removed  bool   `json:"removed"`
	BuildKey string `json:"build_key,omitempty"`
}

// removeBuild deletes a prefix that a build finished in, with its log and
// lock file. It refuses anything without a build stamp, so an installed
// PostgreSQL (or any other directory) given by mistake is never touched.
// A prefix that is already gone is not an error: destroy must be idempotent.
func removeBuild(prefix, wantKey string) (removed, error) {
	abs, err := filepath.Abs(prefix)
	if err != nil {
		return removed{Prefix: prefix}, fmt.Errorf("remove build %s: %w", prefix, err)
	}
	r := removed{Prefix: abs}
	if abs == "/" || filepath.Dir(abs) == "/" {
		return r, fmt.Errorf("remove build %s: refusing a top-level directory", abs)
	}
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return r, fmt.Errorf("remove build %s: %w", abs, err)
	}
	b, err := os.ReadFile(filepath.Join(abs, pgbuild.StampName))
	if err != nil {
		return r, fmt.Errorf("remove build %s: no build stamp %s (%w): it was not built by pgbench-runner build, so it is left alone", abs, pgbuild.StampName, err)
	}
	var st pgbuild.Result
	if err := json.Unmarshal(b, &st); err != nil || st.BuildKey == "" {
		return r, fmt.Errorf("remove build %s: unreadable build stamp %s: left alone", abs, pgbuild.StampName)
	}
	r.BuildKey = st.BuildKey
	if wantKey != "" && st.BuildKey != wantKey {
		return r, fmt.Errorf("remove build %s: it holds build %s, not %s: left alone", abs, st.BuildKey, wantKey)
	}
	// A build in progress holds the lock; never delete under it.
	lock, err := pgbuild.TryLockPrefix(abs)
	if errors.Is(err, filelock.ErrHeld) {
		return r, fmt.Errorf("remove build %s: a build holds %s.lock: %w", abs, abs, err)
	} else if err != nil {
		return r, fmt.Errorf("remove build %s: %w", abs, err)
	}
	defer lock.Close()
	if err := os.RemoveAll(abs); err != nil {
		return r, fmt.Errorf("remove build %s: %w", abs, err)
	}
	os.Remove(abs + ".log")
	os.Remove(abs + ".lock")
	r.Removed = true
	return r, nil
}

// checkSystemBinDir makes sure an adopted installation has every program a
// campaign runs, so a missing pgbench or psql fails at adopt time, not
// hours later.
func checkSystemBinDir(dir string) error {
	if err := pgctl.CheckBinDir(dir); err != nil {
		return fmt.Errorf("adopt %s: %w (install the PostgreSQL server and client packages, or point system at another bin directory)", dir, err)
	}
	return nil
}
