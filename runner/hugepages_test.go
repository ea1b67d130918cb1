package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgctl"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

func TestHugepagesPlanPages(t *testing.T) {
	code, out, errOut := runCapture(t, "hugepages", "plan", "--pages", "64", "--json")
	if code != 0 {
		t.Fatalf("exit = %d, want 0; stderr %s", code, errOut)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p["pages"] != 64.0 || p["page_size_bytes"] != float64(2<<20) || p["bytes"] != float64(128<<20) {
		t.Errorf("plan = %v, want 64 pages of 2 MB, 128 MiB", p)
	}
	for _, k := range []string{"memory_fraction_of_total", "remaining_bytes"} {
		if _, ok := p[k]; !ok {
			t.Errorf("plan has no %q", k)
		}
	}
	if code, _, _ := runCapture(t, "hugepages", "plan", "--pages", "1", "--memory-fraction", "0.25"); code != 2 {
		t.Errorf("two sizing flags: exit = %d, want 2", code)
	}
}

func nrHugepages(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/vm/nr_hugepages")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHugepagesReserveReleaseCLI(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	prev := testhost.SaveSysctl(t, "vm.nr_hugepages")
	n, _ := strconv.Atoi(strings.TrimSpace(prev))
	state := filepath.Join(t.TempDir(), "hp.json")
	code, out, errOut := runCapture(t, "hugepages", "reserve", "--pages", strconv.Itoa(n+64), "--state", state, "--json")
	if code != 0 {
		t.Fatalf("reserve exit = %d, want 0; stderr %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r["requested"] != float64(n+64) || r["total"] != float64(n+64) || r["previous"] != float64(n) {
		t.Errorf("reserve = %v, want requested/total %d previous %d", r, n+64, n)
	}
	if _, ok := r["free"]; !ok {
		t.Errorf("reserve has no free")
	}
	if code, _, errOut := runCapture(t, "hugepages", "release", "--state", state, "--json"); code != 0 {
		t.Fatalf("release exit = %d, want 0; stderr %s", code, errOut)
	}
	if got := nrHugepages(t); got != prev {
		t.Errorf("nr_hugepages after release = %q, want %q", got, prev)
	}
}

func TestHugepagesReserveImpossibleCLI(t *testing.T) {
	testhost.RequireRoot(t)
	testhost.LockKernel(t)
	prev := testhost.SaveSysctl(t, "vm.nr_hugepages")
	state := filepath.Join(t.TempDir(), "hp.json")
	// 64 TiB of 2 MB pages: more than this host's memory.
	code, out, _ := runCapture(t, "hugepages", "reserve", "--pages", "33554432", "--state", state, "--json")
	if code != 1 {
		t.Errorf("exit = %d, want 1", code)
	}
	var doc errorDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	if !strings.HasPrefix(doc.Error.Message, "requested 33554432 pages of 2 MB, the kernel gave ") {
		t.Errorf("message = %q, want the shortfall message", doc.Error.Message)
	}
	if got := nrHugepages(t); got != prev {
		t.Errorf("nr_hugepages after shortfall = %q, want %q", got, prev)
	}
}

// TestPlanForPostgresStarts: the CLI's plan for PostgreSQL 15 is a pool it can
// start on with huge_pages=on.
func TestPlanForPostgresStarts(t *testing.T) {
	const bin = "/usr/lib/postgresql/15/bin"
	testhost.RequireRoot(t)
	testhost.RequireCommand(t, "postgres", bin)
	testhost.LockKernel(t)
	testhost.SaveSysctl(t, "vm.nr_hugepages")
	code, out, errOut := runCapture(t, "hugepages", "plan", "--for-postgres", bin, "--set", "shared_buffers=192MB", "--set", "max_connections=50", "--json")
	if code != 0 {
		t.Fatalf("plan exit = %d, want 0; stderr %s", code, errOut)
	}
	var p struct {
		Pages  int64 `json:"pages"`
		SHMem  int64 `json:"shared_memory_size_bytes"`
		PageSz int64 `json:"page_size_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.SHMem <= 192<<20 || p.Pages*p.PageSz < p.SHMem {
		t.Fatalf("plan = %+v, want a segment above shared_buffers that the pages cover", p)
	}
	t.Logf("plan: %d pages for a %d-byte segment", p.Pages, p.SHMem)
	if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "hp.json")
	if code, _, errOut := runCapture(t, "hugepages", "reserve", "--pages", strconv.FormatInt(p.Pages, 10), "--state", state); code != 0 {
		t.Fatalf("reserve exit = %d; stderr %s", code, errOut)
	}
	ctx := context.Background()
	c, cleanup, err := pgctl.Scratch(ctx, bin, map[string]string{"shared_buffers": "192MB", "max_connections": "50", "huge_pages": "on"})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start with the planned %d pages: %v", p.Pages, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// Each action takes only its own flags: another action's flag is a usage
// error naming the flag and the action, before anything is read or changed.
func TestHugepagesForeignFlags(t *testing.T) {
	state := filepath.Join(t.TempDir(), "hp.json")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"plan", "--pages", "4", "--state", state}, "--state"},
		{[]string{"plan", "--pages", "4", "--node", "0"}, "--node"},
		{[]string{"reserve", "--pages", "4", "--state", state, "--memory-fraction", "0.1"}, "--memory-fraction"},
		{[]string{"reserve", "--pages", "4", "--state", state, "--set", "shared_buffers=1GB"}, "--set"},
		{[]string{"release", "--state", state, "--pages", "4"}, "--pages"},
		{[]string{"release", "--state", state, "--page-size", "1GB"}, "--page-size"},
		{[]string{"status", "--state", state}, "--state"},
		{[]string{"status", "--for-postgres", "/usr/lib/postgresql/15/bin"}, "--for-postgres"},
	} {
		action := tc.args[0]
		code, _, errOut := runCapture(t, append([]string{"hugepages"}, tc.args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit = %d, want %d", tc.args, code, exitUsage)
		}
		if want := tc.flag + " does not apply to hugepages " + action; !strings.Contains(errOut, want) {
			t.Errorf("%v: stderr = %q, want it to say %q", tc.args, errOut, want)
		}
		code, out, _ := runCapture(t, append(append([]string{"hugepages"}, tc.args...), "--json")...)
		var doc errorDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitUsage || !strings.Contains(doc.Error.Message, tc.flag) {
			t.Errorf("%v --json: exit %d, document %q (%v), want exit %d and an error naming %s", tc.args, code, out, err, exitUsage, tc.flag)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after refused commands: stat err = %v, want not exist", err)
	}
	// --help of an action lists its own flags only, on stdout.
	code, help, _ := runCapture(t, "hugepages", "release", "--help")
	if code != exitOK || !strings.Contains(help, "--state") || strings.Contains(help, "--pages") {
		t.Errorf("hugepages release --help: exit %d, %q; want --state listed and --pages not", code, help)
	}
}
