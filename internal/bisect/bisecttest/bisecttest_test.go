package bisecttest

import (
	"path/filepath"
	"testing"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild/pgbuildtest"
)

// The repository made afresh has the commits of the shared one, hash for
// hash: what lets the bisect tests of every package share it and their
// builds.
func TestPostgreSQLIsTheSameEveryTime(t *testing.T) {
	shared := PostgreSQL(t)
	if got, want := shared.Head(), shared.Commits[len(edits)-1]; got != want || shared.Commits[3] != shared.Slow {
		t.Fatalf("head %+v, slow %+v; want the last edit and the fourth", got, shared.Slow)
	}
	again := PostgreSQL(t)
	if again.Dir != shared.Dir {
		t.Errorf("second call: %s, want the shared %s", again.Dir, shared.Dir)
	}
	dir := filepath.Join(t.TempDir(), "postgresql")
	makePostgreSQL(t, pgbuildtest.Tarball(t), dir)
	fresh := readPostgreSQL(t, dir)
	if fresh.Base != shared.Base || fresh.Slow != shared.Slow || fresh.Head() != shared.Head() {
		t.Errorf("made afresh: base %s, slow %s, head %s; shared: %s, %s, %s",
			fresh.Base.Hash, fresh.Slow.Hash, fresh.Head().Hash, shared.Base.Hash, shared.Slow.Hash, shared.Head().Hash)
	}
}
