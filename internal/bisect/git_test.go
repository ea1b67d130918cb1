package bisect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/bisect/bisecttest"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
)

// smallRepo is bisecttest.Small with tags c1..cn and a side branch off c2.
func smallRepo(t *testing.T, n int) string {
	t.Helper()
	dir, _ := bisecttest.Small(t, n)
	bisecttest.Git(t, dir, "checkout", "-q", "-b", "side", "c2")
	os.WriteFile(filepath.Join(dir, "g"), []byte("side"), 0o644)
	bisecttest.Git(t, dir, "add", "g")
	bisecttest.Git(t, dir, "commit", "-q", "-m", "side commit")
	bisecttest.Git(t, dir, "tag", "side")
	bisecttest.Git(t, dir, "checkout", "-q", "main")
	return dir
}

func TestResolveRange(t *testing.T) {
	repo := smallRepo(t, 6)
	ctx := context.Background()
	var phases []string
	m, warning, err := openMirror(ctx, t.TempDir(), repo, func(f string, a ...any) { phases = append(phases, f) })
	if err != nil || warning != "" {
		t.Fatalf("openMirror = %v, warning %q", err, warning)
	}
	good, bad, between, err := m.resolveRange(ctx, "c1", "main")
	if err != nil {
		t.Fatal(err)
	}
	if good.Subject != "commit 1" || good.Ref != "c1" || bad.Subject != "commit 6" || bad.Ref != "main" {
		t.Errorf("good %+v, bad %+v; want commit 1 (c1) and commit 6 (main)", good, bad)
	}
	var subjects []string
	for _, c := range between {
		subjects = append(subjects, c.Subject)
	}
	if got, want := strings.Join(subjects, ","), "commit 2,commit 3,commit 4,commit 5"; got != want {
		t.Errorf("between = %s, want %s", got, want)
	}
	if got, want := good.AuthorDate.UTC().Format(time.RFC3339), "2025-02-20T12:01:00Z"; got != want {
		t.Errorf("author date %s, want %s", got, want)
	}

	bad1 := []struct {
		good, bad string
		flag      string
		want      string
	}{
		{"nope", "main", "good", `"nope" names no commit`},
		{"c1", "0123456789abcdef0123456789abcdef01234567", "bad", "names no commit"},
		{"c4", "c2", "good", "is not an ancestor of bad c2 (" + between[0].Hash[:10] + "): it is the other way round, swap good and bad"},
		{"side", "main", "good", "is not an ancestor of bad main"},
		{"c5", "c6", "bad", "holds one commit"},
		{"c3", "c3^0", "bad", "are the same commit"},
	}
	for _, tt := range bad1 {
		_, _, _, err := m.resolveRange(ctx, tt.good, tt.bad)
		fe := campaign.ValidationErrors(err)
		if len(fe) == 0 || fe[0].Path.Flag != tt.flag || !strings.Contains(fe[0].Error(), tt.want) {
			t.Errorf("resolveRange(%s, %s) = %v, want a field error on %s containing %q", tt.good, tt.bad, err, tt.flag, tt.want)
		}
	}

	// A second open updates the mirror: a new commit upstream is seen.
	os.WriteFile(filepath.Join(repo, "f"), []byte("new"), 0o644)
	bisecttest.Git(t, repo, "commit", "-q", "-a", "-m", "commit 7")
	m2, warning, err := openMirror(ctx, filepath.Dir(m.dir), repo, func(string, ...any) {})
	if err != nil || warning != "" || m2.dir != m.dir {
		t.Fatalf("second openMirror = %v, %q, dir %s (want %s)", err, warning, m2.dir, m.dir)
	}
	if _, bad, _, err := m2.resolveRange(ctx, "c1", "main"); err != nil || bad.Subject != "commit 7" {
		t.Errorf("after the update main is %q (%v), want commit 7", bad.Subject, err)
	}
	// The upstream gone: the mirror is used as it is, with a warning.
	os.RemoveAll(repo)
	if _, warning, err := openMirror(ctx, filepath.Dir(m.dir), repo, func(string, ...any) {}); err != nil || !strings.Contains(warning, "bisecting with what it has") {
		t.Errorf("openMirror of a gone upstream = %v, warning %q; want a warning", err, warning)
	}
	if _, _, err := openMirror(ctx, t.TempDir(), repo, func(string, ...any) {}); err == nil || !strings.Contains(err.Error(), "clone") {
		t.Errorf("openMirror without upstream or mirror = %v, want a clone error", err)
	}
}
