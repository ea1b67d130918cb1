package pgbench

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current parsers")

// checkGolden compares got (as indented JSON) with testdata/NAME.golden.
func checkGolden(t *testing.T, input string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	b = append(b, '\n')
	golden := strings.TrimSuffix(input, ".input") + ".golden"
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatalf("write %s: %v", golden, err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s mismatch (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", golden, b, want)
	}
}

type goldenResult struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

func inputs(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/%s: %v", pattern, err)
	}
	return files
}

func TestOutputGolden(t *testing.T) {
	for _, in := range inputs(t, "output_*.input") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			text, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var g goldenResult
			out, err := ParseOutput(string(text))
			if err != nil {
				g.Error = err.Error()
			} else {
				g.Result = out
			}
			checkGolden(t, in, g)
		})
	}
}

func TestTransactionLogGolden(t *testing.T) {
	for _, in := range inputs(t, "txlog_*.input") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var g goldenResult
			sum, err := SummarizeLogs([]string{in})
			if err != nil {
				// Keep the message independent of the checkout path.
				g.Error = strings.ReplaceAll(err.Error(), in, filepath.Base(in))
			} else {
				g.Result = sum
			}
			checkGolden(t, in, g)
		})
	}
}
