package pkgmgr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeTools puts shell scripts named after package-manager programs into a
// fresh PATH. Each appends its argv to $PKGMGR_LOG. installed lists the
// packages dpkg-query and rpm report as installed.
func fakeTools(t *testing.T, scripts map[string]string, installed ...string) (logFile string) {
	t.Helper()
	dir := t.TempDir()
	logFile = filepath.Join(dir, "calls.log")
	for name, body := range scripts {
		s := "#!/bin/sh\necho \"" + name + " $*\" >> \"$PKGMGR_LOG\"\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Only the fakes: the scripts use nothing but shell builtins.
	t.Setenv("PATH", dir)
	t.Setenv("PKGMGR_LOG", logFile)
	t.Setenv("PKGMGR_INSTALLED", " "+strings.Join(installed, " ")+" ")
	t.Setenv("PKGMGR_STATE", filepath.Join(dir, "updated"))
	return logFile
}

func calls(t *testing.T, logFile string) []string {
	t.Helper()
	b, err := os.ReadFile(logFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// isInstalled succeeds for the last argument when it is in $PKGMGR_INSTALLED.
const isInstalled = `for last; do :; done
case "$PKGMGR_INSTALLED" in *" $last "*) echo "install ok installed"; exit 0;; esac
exit 1`

func TestDetectOrder(t *testing.T) {
	for _, tt := range []struct {
		tools []string
		want  string
	}{
		{[]string{"apt-get", "dnf", "yum"}, "apt-get"},
		{[]string{"dnf", "yum"}, "dnf"},
		{[]string{"yum"}, "yum"},
	} {
		scripts := map[string]string{}
		for _, n := range tt.tools {
			scripts[n] = "exit 0"
		}
		dir := t.TempDir()
		for name, body := range scripts {
			os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		}
		t.Setenv("PATH", dir)
		m, err := Detect()
		if err != nil || m.Name != tt.want {
			t.Errorf("Detect with %v = %v, %v; want %s", tt.tools, m, err, tt.want)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if m, err := Detect(); !errors.Is(err, ErrNoManager) {
		t.Errorf("Detect without a manager = %v, %v; want ErrNoManager", m, err)
	}
}

// An apt install that fails for lack of package lists is retried after
// apt-get update, non-interactively, and only the missing packages are
// asked for.
func TestInstallAptUpdatesAndRetries(t *testing.T) {
	log := fakeTools(t, map[string]string{
		"dpkg-query": isInstalled,
		"apt-get": `[ "$DEBIAN_FRONTEND" = noninteractive ] || { echo "interactive" >&2; exit 9; }
case "$1" in
update) : > "$PKGMGR_STATE"; exit 0;;
install) [ -e "$PKGMGR_STATE" ] || { echo "E: Unable to locate package" >&2; exit 100; }; echo "Setting up"; exit 0;;
esac
exit 2`,
	}, "coreutils")
	m, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	res, err := m.Install(context.Background(), []string{"coreutils", "numactl", "sysstat"}, Options{Log: func(l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	want := Result{Manager: "apt-get", Installed: []string{"numactl", "sysstat"}, Present: []string{"coreutils"}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Install = %+v, want %+v", res, want)
	}
	gotCalls := calls(t, log)
	wantCalls := []string{
		"dpkg-query -W -f=${Status} -- coreutils",
		"dpkg-query -W -f=${Status} -- numactl",
		"dpkg-query -W -f=${Status} -- sysstat",
		"apt-get install -y -- numactl sysstat",
		"apt-get update",
		"apt-get install -y -- numactl sysstat",
	}
	if !reflect.DeepEqual(gotCalls, wantCalls) {
		t.Errorf("calls = %q, want %q", gotCalls, wantCalls)
	}
	if !reflect.DeepEqual(lines, []string{"E: Unable to locate package", "Setting up"}) {
		t.Errorf("logged lines = %q, want the manager's output", lines)
	}
}

func TestInstallNothingMissingRunsNoInstall(t *testing.T) {
	log := fakeTools(t, map[string]string{"dpkg-query": isInstalled, "apt-get": "exit 1"}, "a", "b")
	m, _ := Detect()
	res, err := m.Install(context.Background(), []string{"a", "b"}, Options{NoRecommends: true})
	if err != nil || len(res.Installed) != 0 || len(res.Present) != 2 {
		t.Fatalf("Install = %+v, %v; want both present", res, err)
	}
	for _, c := range calls(t, log) {
		if strings.HasPrefix(c, "apt-get") {
			t.Errorf("ran %q with nothing missing", c)
		}
	}
}

func TestInstallRPMNoRetry(t *testing.T) {
	log := fakeTools(t, map[string]string{"rpm": isInstalled, "dnf": `echo "No match for argument: $4" >&2; exit 1`}, "gcc")
	m, _ := Detect()
	if m.Family() != RPM {
		t.Fatalf("family of %s = %s, want rpm", m.Name, m.Family())
	}
	_, err := m.Install(context.Background(), []string{"gcc", "nosuch"}, Options{NoRecommends: true})
	if err == nil || !strings.Contains(err.Error(), "install nosuch") || !strings.Contains(err.Error(), "No match") {
		t.Fatalf("Install error = %v, want one naming the package and the manager's message", err)
	}
	want := []string{"rpm -q --whatprovides -- gcc", "rpm -q --whatprovides -- nosuch", "dnf install -y -- nosuch"}
	if got := calls(t, log); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

func TestInstallNoRecommendsApt(t *testing.T) {
	log := fakeTools(t, map[string]string{"dpkg-query": "exit 1", "apt-get": "exit 0"})
	m, _ := Detect()
	if _, err := m.Install(context.Background(), []string{"gcc"}, Options{NoRecommends: true}); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, log); got[len(got)-1] != "apt-get install -y --no-install-recommends -- gcc" {
		t.Errorf("install call = %q, want --no-install-recommends", got[len(got)-1])
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"postgresql-15", "numactl", "libicu-devel", "g++", "pkgconf-pkg-config"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "-y", "--force-yes", "a b", "a\tb", "a\nb", "a,b"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}
