package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pkgmgr"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/runnerclient"
)

// fakeApt puts an apt-get and a dpkg-query that know only coreutils as
// installed on a PATH of their own, logging apt-get's arguments.
func fakeApt(t *testing.T) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "apt.log")
	scripts := map[string]string{
		"dpkg-query": `for last; do :; done; [ "$last" = coreutils ] && { echo "install ok installed"; exit 0; }; exit 1`,
		"apt-get":    `echo "$*" >> "` + log + `"; echo "Setting up $4"`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	return log
}

func TestBootstrapInstallsMissing(t *testing.T) {
	log := fakeApt(t)
	code, stdout, stderr := runCapture(t, "bootstrap", "--packages", "coreutils,numactl", "--json")
	if code != exitOK {
		t.Fatalf("bootstrap exit %d, stderr %s", code, stderr)
	}
	var res pkgmgr.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bootstrap --json printed %q: %v", stdout, err)
	}
	want := pkgmgr.Result{Manager: "apt-get", Installed: []string{"numactl"}, Present: []string{"coreutils"}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("bootstrap = %+v, want %+v", res, want)
	}
	if b, _ := os.ReadFile(log); strings.TrimSpace(string(b)) != "install -y -- numactl" {
		t.Errorf("apt-get calls = %q, want one install of numactl", b)
	}
	if !strings.Contains(stderr, "apt-get: Setting up numactl") {
		t.Errorf("stderr = %q, want the package manager's output", stderr)
	}
	code, stdout, _ = runCapture(t, "bootstrap", "--packages", "coreutils")
	if code != exitOK || !strings.Contains(stdout, "installed none; already installed coreutils") {
		t.Errorf("bootstrap text: exit %d, stdout %q", code, stdout)
	}
}

func TestBootstrapErrors(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tt := range []struct {
		args []string
		code int
		kind string
	}{
		{[]string{}, exitUsage, runnerclient.KindUsage},
		{[]string{"--packages", "--force-yes"}, exitUsage, runnerclient.KindUsage},
		{[]string{"--packages", "a b"}, exitUsage, runnerclient.KindUsage},
		{[]string{"--packages", "numactl"}, exitUnmet, runnerclient.KindUnmet}, // no package manager on PATH
	} {
		code, stdout, _ := runCapture(t, append([]string{"bootstrap", "--json"}, tt.args...)...)
		var doc errorDoc
		json.Unmarshal([]byte(stdout), &doc)
		if code != tt.code || doc.Error.Kind != tt.kind {
			t.Errorf("bootstrap %v: exit %d kind %q, want %d %q", tt.args, code, doc.Error.Kind, tt.code, tt.kind)
		}
	}
}
