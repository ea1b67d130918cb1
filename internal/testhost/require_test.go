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

// A test that judges figures fails in every lane that runs beside others,
// and a test that changes kernel state in a shared lane, each naming the
// list it is missing from; either runs anywhere else.
func TestQuiet(t *testing.T) {
	for _, c := range []struct {
		name, lane, list string
		mark             func(testing.TB)
	}{
		{"Quiet", LaneShared, "QUIET_TESTS", Quiet},
		{"Quiet", LaneKernel, "QUIET_TESTS", Quiet},
		{"LockKernel", LaneShared, "KERNEL_TESTS", LockKernel},
	} {
		if msg := failure(t, c.lane, c.mark); !strings.Contains(msg, c.list+" in scripts/test.sh") {
			t.Errorf("%s in the %s lane: %q, want a failure naming %s in scripts/test.sh", c.name, c.lane, msg, c.list)
		}
	}
	for _, lane := range []string{"", "quiet"} {
		if msg := failure(t, lane, Quiet); msg != "" {
			t.Errorf("Quiet with %s=%q failed: %s", LaneEnv, lane, msg)
		}
	}
}

// QUIET_TESTS in scripts/test.sh lists exactly the tests that call Quiet,
// and KERNEL_TESTS those that call LockKernel and not Quiet, directly or
// through a helper of their package: a test missing from its list would
// fail in its lane, and a name in a list that calls neither would run apart
// for nothing (or not at all).
func TestQuietListsTheQuietTests(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	listed := func(name string) []string {
		m := regexp.MustCompile(`(?ms)^` + name + `=\(\n(.*?)^\)$`).FindSubmatch(script)
		if m == nil {
			t.Fatalf("scripts/test.sh has no %s=( ... ) array", name)
		}
		l := strings.Fields(string(m[1]))
		slices.Sort(l)
		return l
	}
	quiet, err := callers(root, "Quiet")
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := callers(root, "LockKernel")
	if err != nil {
		t.Fatal(err)
	}
	kernel = slices.DeleteFunc(kernel, func(name string) bool { return slices.Contains(quiet, name) })
	if l := listed("QUIET_TESTS"); !slices.Equal(l, quiet) {
		t.Errorf("QUIET_TESTS in scripts/test.sh lists %v; the tests that call testhost.Quiet are %v", l, quiet)
	}
	if l := listed("KERNEL_TESTS"); !slices.Equal(l, kernel) {
		t.Errorf("KERNEL_TESTS in scripts/test.sh lists %v; the tests that call testhost.LockKernel and not testhost.Quiet are %v", l, kernel)
	}
}

// callers lists the tests under root that call the testhost function
// named helper, directly or through a function of their package that does.
func callers(root, helper string) ([]string, error) {
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
			if d, ok := decl.(*ast.FuncDecl); ok && d.Recv == nil && d.Body != nil {
				fns = append(fns, fn{filepath.Dir(p), d.Name.Name, d.Body})
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
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "testhost" && x.Sel.Name == helper {
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
