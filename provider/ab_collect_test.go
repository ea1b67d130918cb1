package provider

import (
	"os"
	"path/filepath"
	"testing"
)

func TestABLocalDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ localDir, want string }{
		{"", filepath.Join(wd, "pgbench-results", "k123")},
		{"out/here", filepath.Join(wd, "out", "here")},
		{"/abs/dir/", "/abs/dir"},
	}
	for _, c := range cases {
		got, err := abLocalDir(c.localDir, "k123")
		if err != nil || got != c.want {
			t.Errorf("abLocalDir(%q) = %q, %v; want %q", c.localDir, got, err, c.want)
		}
	}
}
