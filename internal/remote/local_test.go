package remote

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/proc"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// RunLocal's options reach the process: the environment it starts from
// replaces this process's, and a credential makes it run as that user.
func TestRunLocalOptions(t *testing.T) {
	ctx := context.Background()
	t.Setenv("PGB_INHERITED", "yes")
	res, err := RunLocal(ctx, Command{Args: []string{"env"}, Env: map[string]string{"PGB_ADDED": "2"}},
		LocalOptions{Environ: []string{"PGB_BASE=1"}})
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	if got, want := string(res.Stdout), "PGB_BASE=1\nPGB_ADDED=2\n"; got != want {
		t.Errorf("environment = %q, want %q", got, want)
	}
	res, err = RunLocal(ctx, Command{Args: []string{"env"}}, LocalOptions{})
	if err != nil || !strings.Contains(string(res.Stdout), "PGB_INHERITED=yes\n") {
		t.Errorf("no options: environment %q, %v, want this process's", res.Stdout, err)
	}

	testhost.RequireRoot(t)
	res, err = RunLocal(ctx, Command{Args: []string{"id", "-u"}, Dir: "/"},
		LocalOptions{Credential: &proc.Credential{Uid: 65534, Gid: 65534}})
	if err != nil {
		t.Fatalf("id -u as 65534: %v", err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "65534" {
		t.Errorf("uid = %s, want 65534 (this process is %d)", got, os.Geteuid())
	}
}
