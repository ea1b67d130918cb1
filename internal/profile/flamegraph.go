package profile

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// node is one frame of a flame graph: a function reached by one path of
// callers from the root; Value counts the samples through it.
type node struct {
	Name     string
	Value    int64
	Children map[string]*node
}

// rootName is the flame graph's bottom frame, all samples.
const rootName = "all"

// buildTree merges p's stacks root-first, frames merged by function name
// along the path.
func buildTree(p *profile.Profile) *node {
	root := &node{Name: rootName, Children: map[string]*node{}}
	vi := sampleIndex(p)
	for _, s := range p.Sample {
		v := s.Value[vi]
		root.Value += v
		n := root
		for i := len(s.Location) - 1; i >= 0; i-- {
			lines := s.Location[i].Line
			// Line[0] is the innermost of a location's inlined functions.
			for j := len(lines) - 1; j >= 0; j-- {
				name := "?"
				if f := lines[j].Function; f != nil {
					name = f.Name
				}
				c := n.Children[name]
				if c == nil {
					c = &node{Name: name, Children: map[string]*node{}}
					n.Children[name] = c
				}
				c.Value += v
				n = c
			}
		}
	}
	return root
}

// sortedChildren are n's children by name, so that the same tree always
// draws the same way (flamegraph.pl's order).
func (n *node) sortedChildren() []*node {
	cs := make([]*node, 0, len(n.Children))
	for _, c := range n.Children {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}

// frame is one box of a differential flame graph.
type frame struct {
	Name  string
	Depth int     // 0 is the root
	X, W  float64 // in pixels
	Cand  float64 // share of cand's samples through this frame, 0..1
	Base  float64 // share of base's samples through the same path
	Delta float64 // Cand - Base
}

// layout places cand's frames in a graph width pixels wide: each frame as
// wide as its share of cand's samples, children left to right from their
// parent's left edge (what is left of the parent is its self time), each
// compared with the frame at the same path in base.
func layout(cand, base *node, width float64) []frame {
	var frames []frame
	if cand.Value == 0 {
		return nil
	}
	var walk func(c, b *node, depth int, x float64)
	walk = func(c, b *node, depth int, x float64) {
		f := frame{Name: c.Name, Depth: depth, X: x, W: float64(c.Value) / float64(cand.Value) * width}
		f.Cand = float64(c.Value) / float64(cand.Value)
		if b != nil && base.Value > 0 {
			f.Base = float64(b.Value) / float64(base.Value)
		}
		f.Delta = f.Cand - f.Base
		frames = append(frames, f)
		for _, cc := range c.sortedChildren() {
			var bc *node
			if b != nil {
				bc = b.Children[cc.Name]
			}
			walk(cc, bc, depth+1, x)
			x += float64(cc.Value) / float64(cand.Value) * width
		}
	}
	walk(cand, base, 0, 0)
	return frames
}

// Colours: grey for no change; for a change, the channel of its sign (red
// grew, blue shrank) at full strength and the other two fading with the
// size of the change, so that even a change too small to see has the hue
// of its sign.
var (
	sameColour   = [3]float64{224, 224, 224}
	grewColour   = [3]float64{240, 40, 40}
	shrankColour = [3]float64{40, 90, 240}
)

// fill is the colour of a frame whose share changed by delta when the
// largest change of any frame is maxAbs.
func fill(delta, maxAbs float64) string {
	if maxAbs <= 0 || delta == 0 {
		return fmt.Sprintf("rgb(%.0f,%.0f,%.0f)", sameColour[0], sameColour[1], sameColour[2])
	}
	t := math.Min(math.Abs(delta)/maxAbs, 1)
	to, strong := grewColour, 0
	if delta < 0 {
		to, strong = shrankColour, 2
	}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(sameColour[i] + (to[i]-sameColour[i])*t))
	}
	c[strong] = int(to[strong])
	return fmt.Sprintf("rgb(%d,%d,%d)", c[0], c[1], c[2])
}

// Geometry of the SVG, in pixels.
const (
	graphWidth  = 1200.0
	frameHeight = 17.0
	marginX     = 10.0
	headerH     = 56.0
	footerH     = 10.0
	charWidth   = 7.0 // of 12px monospace, to fit labels
	minDrawW    = 0.1 // frames narrower are not drawn
)

// WriteDiffFlameGraph writes a self-contained SVG differential flame graph
// of cand against base: frame widths are cand's samples (share of cand's
// total), colour is the change of that frame's share from base to cand (red
// grew, blue shrank, grey same; intensity scaled to the largest change),
// each frame has a <title> tooltip "func: cand x% (base y%, +z pts)" and a
// label when wide enough, and a title line names base and cand. Frames are
// merged by function name along the path. Frames only base has are not
// drawn: their loss shows as the blue of their callers.
func WriteDiffFlameGraph(w io.Writer, base, cand *profile.Profile, title, baseName, candName string) error {
	bt, ct := buildTree(base), buildTree(cand)
	if ct.Value == 0 {
		return errors.New("flame graph: the candidate profile has no samples")
	}
	if bt.Value == 0 {
		return errors.New("flame graph: the base profile has no samples")
	}
	frames := layout(ct, bt, graphWidth)
	maxDepth, maxAbs := 0, 0.0
	for _, f := range frames {
		maxDepth = max(maxDepth, f.Depth)
		maxAbs = math.Max(maxAbs, math.Abs(f.Delta))
	}
	height := headerH + float64(maxDepth+1)*frameHeight + footerH
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>`+"\n")
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="monospace" font-size="12">`+"\n",
		graphWidth+2*marginX, height, graphWidth+2*marginX, height)
	fmt.Fprintf(bw, `<rect x="0" y="0" width="100%%" height="100%%" fill="rgb(250,250,250)"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%.1f" y="20" font-size="16" text-anchor="middle">%s</text>`+"\n", marginX+graphWidth/2, esc(title))
	fmt.Fprintf(bw, `<text x="%.1f" y="40" text-anchor="middle">base: %s (%d samples), cand: %s (%d samples); width = share of cand, red = share grew, blue = shrank (largest change %.2f pts)</text>`+"\n",
		marginX+graphWidth/2, esc(baseName), bt.Value, esc(candName), ct.Value, 100*maxAbs)
	for _, f := range frames {
		if f.W < minDrawW {
			continue
		}
		x := marginX + f.X
		y := headerH + float64(maxDepth-f.Depth)*frameHeight
		fmt.Fprintf(bw, `<g><title>%s</title><rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" stroke="rgb(250,250,250)" stroke-width="0.5"/>`,
			esc(tooltip(f)), x, y, f.W, frameHeight-1, fill(f.Delta, maxAbs))
		if label := fitLabel(f.Name, f.W); label != "" {
			fmt.Fprintf(bw, `<text x="%.2f" y="%.1f">%s</text>`, x+3, y+frameHeight-5, esc(label))
		}
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// tooltip is a frame's "func: cand x% (base y%, +z pts)".
func tooltip(f frame) string {
	return fmt.Sprintf("%s: cand %.2f%% (base %.2f%%, %+.2f pts)", f.Name, 100*f.Cand, 100*f.Base, 100*f.Delta)
}

// fitLabel is name cut to fit a frame w pixels wide, "" when not even a few
// characters fit.
func fitLabel(name string, w float64) string {
	n := int((w - 6) / charWidth)
	if n < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= n {
		return name
	}
	return string(r[:n-2]) + ".."
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
