package profile

import (
	"bytes"
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what the tests read back from a flame graph.
type svgDoc struct {
	Text []string `xml:"text"`
	G    []struct {
		Title string `xml:"title"`
		Rect  struct {
			X     float64 `xml:"x,attr"`
			Width float64 `xml:"width,attr"`
			Fill  string  `xml:"fill,attr"`
		} `xml:"rect"`
		Text string `xml:"text"`
	} `xml:"g"`
}

var (
	tooltipRE = regexp.MustCompile(`^(.*): cand ([\d.]+)% \(base ([\d.]+)%, ([+-][\d.]+) pts\)$`)
	rgbRE     = regexp.MustCompile(`^rgb\((\d+),(\d+),(\d+)\)$`)
)

func parseRGB(t *testing.T, s string) (r, g, b int) {
	t.Helper()
	m := rgbRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("fill %q is not rgb(r,g,b)", s)
	}
	r, _ = strconv.Atoi(m[1])
	g, _ = strconv.Atoi(m[2])
	b, _ = strconv.Atoi(m[3])
	return r, g, b
}

func TestLayoutGeometry(t *testing.T) {
	cand := synthetic(map[string]int64{"main;a;x": 30, "main;a": 15, "main;b": 25, "main": 5, "init": 25})
	base := synthetic(map[string]int64{"main;a;x": 10, "main;b": 50, "main": 10, "init": 30})
	frames := layout(buildTree(cand), buildTree(base), 1000)
	if frames[0].Name != rootName || frames[0].W != 1000 || frames[0].X != 0 {
		t.Fatalf("root frame = %+v, want %q at 0, 1000 wide", frames[0], rootName)
	}
	// Preorder: the children of frame i are the following frames one level
	// deeper, up to the next frame at i's depth or above.
	for i, f := range frames {
		var sum float64
		x := f.X
		for j := i + 1; j < len(frames) && frames[j].Depth > f.Depth; j++ {
			if frames[j].Depth != f.Depth+1 {
				continue
			}
			if math.Abs(frames[j].X-x) > 1e-9 {
				t.Errorf("frame %s at x=%v, want %v (right after its left sibling)", frames[j].Name, frames[j].X, x)
			}
			x += frames[j].W
			sum += frames[j].W
		}
		if sum > f.W+1e-9 {
			t.Errorf("children of %s are %v wide, more than its %v", f.Name, sum, f.W)
		}
		if f.Name == rootName && math.Abs(sum-f.W) > 1e-9 {
			t.Errorf("root's children are %v wide, want the root's width %v (no sample ends at the root)", sum, f.W)
		}
	}
	byName := map[string]frame{}
	for _, f := range frames {
		byName[f.Name] = f
	}
	for name, want := range map[string]struct{ w, cand, base float64 }{
		"main": {750, 0.75, 0.70},
		"a":    {450, 0.45, 0.10},
		"x":    {300, 0.30, 0.10},
		"b":    {250, 0.25, 0.50},
		"init": {250, 0.25, 0.30},
	} {
		f := byName[name]
		if math.Abs(f.W-want.w) > 1e-9 || math.Abs(f.Cand-want.cand) > 1e-9 || math.Abs(f.Base-want.base) > 1e-9 {
			t.Errorf("frame %s = w %v cand %v base %v, want w %v cand %v base %v", name, f.W, f.Cand, f.Base, want.w, want.cand, want.base)
		}
	}
	// Left to right by name: init before main, a before b.
	if byName["init"].X != 0 || byName["main"].X != 250 || byName["a"].X != 250 || byName["b"].X != 700 {
		t.Errorf("x of init, main, a, b = %v %v %v %v, want 0 250 250 700",
			byName["init"].X, byName["main"].X, byName["a"].X, byName["b"].X)
	}
}

func TestFillBySign(t *testing.T) {
	if got, want := fill(0.35, 0.35), "rgb(240,40,40)"; got != want {
		t.Errorf("fill(largest growth) = %s, want %s", got, want)
	}
	if got, want := fill(-0.35, 0.35), "rgb(40,90,240)"; got != want {
		t.Errorf("fill(largest shrink) = %s, want %s", got, want)
	}
	if got, want := fill(0, 0.35), "rgb(224,224,224)"; got != want {
		t.Errorf("fill(no change) = %s, want %s", got, want)
	}
	r0, _, b0 := parseRGB(t, fill(1e-6, 0.35))
	if !(r0 > b0) {
		t.Errorf("fill(+1e-6) = %s, want red however small the change", fill(1e-6, 0.35))
	}
	r1, _, b1 := parseRGB(t, fill(0.01, 0.35))
	r2, _, b2 := parseRGB(t, fill(0.2, 0.35))
	if !(r1 > b1 && r2 > b2 && r2-b2 > r1-b1) {
		t.Errorf("fill(+0.01) r-b = %d, fill(+0.2) r-b = %d: want both red, the larger change redder", r1-b1, r2-b2)
	}
}

func TestWriteDiffFlameGraphSynthetic(t *testing.T) {
	base := synthetic(map[string]int64{"main;a": 50, "main;b": 50})
	cand := synthetic(map[string]int64{"main;a": 75, "main;b": 20, "main;operator<<&\"x\"": 5})
	var buf bytes.Buffer
	if err := WriteDiffFlameGraph(&buf, base, cand, "a vs <b>", "base & co", "cand"); err != nil {
		t.Fatalf("WriteDiffFlameGraph: %v", err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("flame graph is not valid XML: %v\n%s", err, buf.String())
	}
	if len(doc.Text) < 2 || doc.Text[0] != "a vs <b>" || !strings.Contains(doc.Text[1], "base: base & co") || !strings.Contains(doc.Text[1], "cand: cand") {
		t.Errorf("title lines = %q, want the title and base and cand named", doc.Text)
	}
	seen := map[string]string{}
	for _, g := range doc.G {
		m := tooltipRE.FindStringSubmatch(g.Title)
		if m == nil {
			t.Fatalf("tooltip %q does not read \"func: cand x%% (base y%%, +z pts)\"", g.Title)
		}
		delta, _ := strconv.ParseFloat(m[4], 64)
		r, gr, b := parseRGB(t, g.Rect.Fill)
		switch {
		case delta > 0 && !(r > b):
			t.Errorf("%s grew (%+.2f pts) but fill %s is not red", m[1], delta, g.Rect.Fill)
		case delta < 0 && !(b > r):
			t.Errorf("%s shrank (%+.2f pts) but fill %s is not blue", m[1], delta, g.Rect.Fill)
		case delta == 0 && !(r == gr && gr == b):
			t.Errorf("%s did not change but fill %s is not grey", m[1], g.Rect.Fill)
		}
		seen[m[1]] = g.Title
	}
	for name, want := range map[string]string{
		"all":            "all: cand 100.00% (base 100.00%, +0.00 pts)",
		"a":              "a: cand 75.00% (base 50.00%, +25.00 pts)",
		"b":              "b: cand 20.00% (base 50.00%, -30.00 pts)",
		`operator<<&"x"`: `operator<<&"x": cand 5.00% (base 0.00%, +5.00 pts)`,
	} {
		if seen[name] != want {
			t.Errorf("tooltip of %s = %q, want %q", name, seen[name], want)
		}
	}
	if err := WriteDiffFlameGraph(&buf, base, synthetic(nil), "", "", ""); err == nil {
		t.Errorf("WriteDiffFlameGraph(empty cand) error = nil, want error")
	}
}
