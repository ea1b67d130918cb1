package pkgmgr

import (
	"reflect"
	"testing"
)

func TestToolPackages(t *testing.T) {
	debian := "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"
	ubuntu := "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n"
	fedora := "NAME=\"Fedora Linux\"\nID=fedora\n"
	for _, tt := range []struct {
		f         Family
		rel, tool string
		want      []string
	}{
		{Deb, debian, "perf", []string{"linux-perf"}},
		{Deb, ubuntu, "perf", []string{"linux-tools-common", "linux-tools-6.8.0-1012-aws"}},
		{RPM, fedora, "perf", []string{"perf"}},
		{Deb, debian, "ccache", []string{"ccache"}},
		{RPM, fedora, "numactl", []string{"numactl"}},
	} {
		got, err := ToolPackages(tt.f, tt.rel, "6.8.0-1012-aws", tt.tool)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ToolPackages(%s, %q, %s) = %v, %v; want %v", tt.f, osID(tt.rel), tt.tool, got, err, tt.want)
		}
	}
	if _, err := ToolPackages(Deb, debian, "6.1", "vtune"); err == nil {
		t.Error("an unknown tool is accepted")
	}
}
