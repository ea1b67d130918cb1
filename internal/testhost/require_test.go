package testhost

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fatalTB records a Fatalf and ends the goroutine that called it, as
// testing.T's does.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure calls mark (Quiet or LockKernel) with PGBENCH_TEST_LANE set to
// lane and returns what it failed with ("" when it let the test go on).
func failure(t *testing.T, lane string, mark func(testing.TB)) string {
	t.Setenv(LaneEnv, lane)
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mark(tb)
	}()
	<-done
	return tb.fatal
}

// A test that needs the machine to itself fails in a shared lane of make
// test, naming the list it is missing from; a Quiet test runs anywhere
// else.
func TestQuiet(t *testing.T) {
	for name, mark := range map[string]func(testing.TB){"Quiet": Quiet, "LockKernel": LockKernel} {
		if msg := failure(t, "shared", mark); !strings.Contains(msg, "QUIET_TESTS in scripts/test.sh") {
			t.Errorf("%s in a shared lane: %q, want a failure naming QUIET_TESTS in scripts/test.sh", name, msg)
		}
	}
	for _, lane := range []string{"", "quiet"} {
		if msg := failure(t, lane, Quiet); msg != "" {
			t.Errorf("Quiet with %s=%q failed: %s", LaneEnv, lane, msg)
		}
	}
}

// QUIET_TESTS in scripts/test.sh lists exactly the tests that call Quiet or
// LockKernel, directly or through a helper of their package: a test
// missing from it would fail in its shared lane, and a name in it that
// calls neither would run alone for nothing (or not at all).
func TestQuietListsTheQuietTests(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?ms)^QUIET_TESTS=\(\n(.*?)^\)$`).FindSubmatch(script)
	if m == nil {
		t.Fatalf("scripts/test.sh has no QUIET_TESTS=( ... ) array")
	}
	listed := strings.Fields(string(m[1]))
	slices.Sort(listed)

	calling, err := quietTests(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(listed, calling) {
		t.Errorf("QUIET_TESTS in scripts/test.sh lists %v; the tests that call testhost.Quiet or testhost.LockKernel are %v", listed, calling)
	}
}

// quietTests lists the tests under root that call testhost.Quiet or
// testhost.LockKernel, directly or through a function of their package
// that does.
func quietTests(root string) ([]string, error) {
	type fn struct {
		dir, name string
		body      *ast.BlockStmt
	}
	var fns []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
				fns = append(fns, fn{filepath.Dir(p), fd.Name.Name, fd.Body})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	calls := func(body *ast.BlockStmt, helpers map[string]bool) bool {
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "testhost" && (x.Sel.Name == "Quiet" || x.Sel.Name == "LockKernel") {
					found = true
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && helpers[id.Name] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	helpers := map[string]map[string]bool{}
	for _, f := range fns {
		if !strings.HasPrefix(f.name, "Test") && calls(f.body, nil) {
			if helpers[f.dir] == nil {
				helpers[f.dir] = map[string]bool{}
			}
			helpers[f.dir][f.name] = true
		}
	}
	var tests []string
	for _, f := range fns {
		if strings.HasPrefix(f.name, "Test") && calls(f.body, helpers[f.dir]) {
			tests = append(tests, f.name)
		}
	}
	slices.Sort(tests)
	return slices.Compact(tests), nil
}
