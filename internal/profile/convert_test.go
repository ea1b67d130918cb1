package profile

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current parser")

// testUnknown names [unknown] frames from what the parser passed, so the
// golden file shows the address and leaf flag without reading the DSO.
func testUnknown(dso string, addr uint64, leaf bool) string {
	return fmt.Sprintf("?%s@%#x/leaf=%v", filepath.Base(dso), addr, leaf)
}

// render is a profile as text: one line per sample, frames leaf-first.
func render(p *profile.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "samples %d, locations %d, functions %d, mappings %d, period %d, duration %dns\n",
		len(p.Sample), len(p.Location), len(p.Function), len(p.Mapping), p.Period, p.DurationNanos)
	for _, s := range p.Sample {
		fmt.Fprintf(&b, "%s pid=%d %v:", s.Label["comm"][0], s.NumLabel["pid"][0], s.Value)
		for _, l := range s.Location {
			fmt.Fprintf(&b, " %s(%s)", l.Line[0].Function.Name, filepath.Base(l.Mapping.File))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestParseScriptGolden(t *testing.T) {
	in, err := os.Open("testdata/postgres.script")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p, err := parseScript(in, nil, testUnknown)
	if err != nil {
		t.Fatalf("parseScript: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	got := render(p)
	golden := "testdata/postgres.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestParseScript(t *testing.T) {
	read := func(keep func(string) bool) (*profile.Profile, error) {
		f, err := os.Open("testdata/postgres.script")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return parseScript(f, keep, testUnknown)
	}
	all, err := read(nil)
	if err != nil {
		t.Fatalf("parseScript: %v", err)
	}
	pg, err := read(func(comm string) bool { return comm == "postgres" })
	if err != nil {
		t.Fatalf("parseScript(keep postgres): %v", err)
	}
	if got, want := len(all.Sample), 7; got != want {
		t.Errorf("samples kept with nil keep = %d, want %d", got, want)
	}
	if got, want := len(pg.Sample), 6; got != want {
		t.Errorf("samples kept with keep postgres = %d, want %d", got, want)
	}
	comms := map[string]bool{}
	for _, s := range all.Sample {
		comms[s.Label["comm"][0]] = true
	}
	if !comms["pg bench"] {
		t.Errorf("comms = %v, want the one with a space, %q", comms, "pg bench")
	}
	// The first sample's caller is "[unknown] ([unknown])": dropped.
	if got := len(all.Sample[0].Location); got != 1 {
		t.Errorf("first sample has %d locations, want 1 (the [unknown] DSO frame dropped)", got)
	}
	if got, want := all.Sample[0].Location[0].Line[0].Function.Name, "EVP_CipherUpdate"; got != want {
		t.Errorf("first sample's leaf = %q, want %q (symbol without +0x offset)", got, want)
	}
	// One location per (function, mapping): as many as distinct pairs.
	pairs := map[string]bool{}
	for _, s := range all.Sample {
		for _, l := range s.Location {
			pairs[l.Line[0].Function.Name+"|"+l.Mapping.File] = true
		}
	}
	if len(pairs) != len(all.Location) {
		t.Errorf("%d locations for %d distinct (function, mapping) pairs, want one each", len(all.Location), len(pairs))
	}
	if got, want := all.Sample[0].Value, []int64{1, 2004008}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("sample values = %v, want %v (samples, cpu ns)", got, want)
	}
	if got, want := all.DurationNanos, int64(2337947736000-2337912621000); got != want {
		t.Errorf("duration = %d ns, want %d", got, want)
	}

	for name, in := range map[string]string{
		"no samples":       "",
		"bad header":       "postgres 1 2 3\n",
		"frame before any": "\t 5af6fb f+0x1 (/x)\n",
		"bad frame":        "postgres 1/1 1.000001: 10\n\tnot a frame\n",
	} {
		if _, err := parseScript(strings.NewReader(in), nil, testUnknown); err == nil {
			t.Errorf("parseScript(%s) error = nil, want error", name)
		}
	}
	if _, err := parseScript(strings.NewReader("postgres 1/1 1.000001: 10\n\t 1 f+0x1 (/x)\n"), func(string) bool { return false }, testUnknown); err == nil ||
		!strings.Contains(err.Error(), "no samples kept of 1") {
		t.Errorf("parseScript(all filtered) error = %v, want no samples kept of 1", err)
	}
}

// synthetic builds a profile from root-first stacks "main;a;b" and counts.
func synthetic(stacks map[string]int64) *profile.Profile {
	b := newBuilder()
	for stack, n := range stacks {
		fs := strings.Split(stack, ";")
		s := &profile.Sample{Value: []int64{n, n * 1000}}
		for i := len(fs) - 1; i >= 0; i-- {
			s.Location = append(s.Location, b.location(fs[i], "/bin/x"))
		}
		b.p.Sample = append(b.p.Sample, s)
	}
	return b.p
}

func TestTop(t *testing.T) {
	p := synthetic(map[string]int64{
		"main;a;b": 6,
		"main;a":   2,
		"main;c;a": 1,
		"main;r;r": 1, // recursion counts once in cum
	})
	top := Top(p, 3)
	want := []Func{{"b", 0.6, 0.6}, {"a", 0.3, 0.9}, {"r", 0.1, 0.1}}
	if len(top) != len(want) {
		t.Fatalf("Top(3) = %v, want %v", top, want)
	}
	for i := range want {
		if top[i].Name != want[i].Name || math.Abs(top[i].Flat-want[i].Flat) > 1e-12 || math.Abs(top[i].Cum-want[i].Cum) > 1e-12 {
			t.Errorf("Top(3)[%d] = %+v, want %+v", i, top[i], want[i])
		}
	}
	if got := len(Top(p, -1)); got != 5 {
		t.Errorf("len(Top(-1)) = %d, want all 5 functions", got)
	}
}

func TestWriteReadFile(t *testing.T) {
	p := synthetic(map[string]int64{"main;a": 3, "main;b": 1})
	path := filepath.Join(t.TempDir(), "x.pb.gz")
	if err := WriteFile(path, p); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	b, _ := os.ReadFile(path)
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("%s does not start with the gzip magic", path)
	}
	q, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if got, want := Top(q, 1)[0], (Func{"a", 0.75, 0.75}); got != want {
		t.Errorf("Top(read back)[0] = %+v, want %+v", got, want)
	}
}
