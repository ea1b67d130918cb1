package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stageSource copies the repository's source files (tracked and untracked,
// not ignored) into a temporary directory, so a release build never writes
// the runners it embeds into the working tree.
func stageSource(src string) (string, error) {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return "", fmt.Errorf("list the source files with git ls-files in %s: %w", src, err)
	}
	stage, err := os.MkdirTemp("", "pgbench-release-")
	if err != nil {
		return "", err
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		if err := copyFile(filepath.Join(src, rel), filepath.Join(stage, rel)); err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in the index
			}
			os.RemoveAll(stage)
			return "", err
		}
	}
	return stage, nil
}

func copyFile(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, fi.Mode().Perm())
}

// goBuild builds one static binary of a package in the staged source.
func goBuild(ctx context.Context, o Options, stage, goos, goarch, pkg, out string) error {
	fmt.Fprintf(o.Log, "==> go build %s for %s/%s\n", pkg, goos, goarch)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+o.Version, "-o", out, pkg)
	cmd.Dir = stage
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = o.Log, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s/%s: %w\n%s", pkg, goos, goarch, err, stderr.String())
	}
	return nil
}

// buildRunners builds the static runner for each Linux architecture into
// the staged embed directory (so every provider binary carries both) and
// packs each into dist as a tar.gz for hosts set up by hand.
func buildRunners(ctx context.Context, o Options, stage string) ([]string, error) {
	var names []string
	for _, arch := range RunnerArchs {
		bin := filepath.Join(stage, "internal", "runnerbin", "bin", "pgbench-runner-linux-"+arch)
		if err := goBuild(ctx, o, stage, "linux", arch, "./runner", bin); err != nil {
			return nil, err
		}
		name := RunnerArchive(o.Version, arch)
		files := []archiveFile{{name: "pgbench-runner", path: bin, mode: 0o755}, {name: "LICENSE", path: filepath.Join(stage, "LICENSE"), mode: 0o644}}
		if err := writeTarGz(filepath.Join(o.Dist, name), files, sourceDate(o.Source)); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// buildProviders builds the provider for each platform and zips it the way
// a registry serves it: one binary named terraform-provider-pgbench_vX.Y.Z.
func buildProviders(ctx context.Context, o Options, stage string) ([]string, error) {
	binDir, err := os.MkdirTemp("", "pgbench-release-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(binDir)
	var names []string
	for _, p := range o.Platforms {
		goos, goarch, _ := strings.Cut(p, "_")
		bin := filepath.Join(binDir, p, BinaryName(o.Version, goos))
		if err := goBuild(ctx, o, stage, goos, goarch, ".", bin); err != nil {
			return nil, err
		}
		name := Name(o.Version, p+".zip")
		files := []archiveFile{{name: BinaryName(o.Version, goos), path: bin, mode: 0o755}}
		if err := writeZip(filepath.Join(o.Dist, name), files, sourceDate(o.Source)); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

type archiveFile struct {
	name string
	path string
	mode os.FileMode
}

func writeZip(path string, files []archiveFile, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, af := range files {
		h := &zip.FileHeader{Name: af.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(af.mode)
		w, err := zw.CreateHeader(h)
		if err == nil {
			err = copyInto(w, af.path)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeTarGz(path string, files []archiveFile, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	err = func() error {
		for _, af := range files {
			fi, err := os.Stat(af.path)
			if err != nil {
				return err
			}
			h := &tar.Header{Name: af.name, Mode: int64(af.mode), Size: fi.Size(), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if err := copyInto(tw, af.path); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return gz.Close()
	}()
	if err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func copyInto(w io.Writer, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(w, src)
	return err
}

// sourceDate is the time stamped into archives: SOURCE_DATE_EPOCH when set,
// else the last commit's time, so that two builds of one commit give the
// same archives.
func sourceDate(src string) time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	out, err := exec.Command("git", "-C", src, "log", "-1", "--format=%ct").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC().Truncate(time.Second)
}
