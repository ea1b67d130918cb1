// Command release builds a release of the provider into a directory without
// publishing it; `make release-snapshot` runs it, and so does the release
// workflow before it uploads the files.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/release"
)

func main() {
	version := flag.String("version", "", "the release's semantic version, without a leading v (required)")
	dist := flag.String("dist", "dist", "output directory; emptied first")
	platforms := flag.String("platforms", strings.Join(release.DefaultPlatforms, ","), "comma-separated OS_ARCH pairs to build the provider for")
	fingerprint := flag.String("gpg-fingerprint", "", "fingerprint of the RSA key that signs SHA256SUMS; empty for an unsigned release")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := os.Getwd()
	if err == nil {
		*dist, err = filepath.Abs(*dist)
	}
	if err != nil {
		fail(err)
	}
	o := release.Options{Version: *version, Source: src, Dist: *dist, GPGFingerprint: *fingerprint, Log: os.Stderr}
	if *platforms != "" {
		o.Platforms = strings.Split(*platforms, ",")
	}
	a, err := release.Build(ctx, o)
	if err != nil {
		fail(err)
	}
	for _, f := range append(append(append(a.Zips, a.Runners...), a.Manifest, a.Sums), a.Signature) {
		if f != "" {
			fmt.Println(filepath.Join(*dist, f))
		}
	}
	if a.Signature == "" {
		fmt.Fprintln(os.Stderr, "release: UNSIGNED: GPG_FINGERPRINT is not set, so there is no "+a.Sums+".sig; a registry will not serve this release")
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}
