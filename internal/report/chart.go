package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// Chart size. At gonum/plot's default 96 dpi the PNG is 768x480 pixels.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 5 * vg.Inch
)

// ChartPixels is the size of chart.png in pixels.
var ChartPixels = [2]int{768, 480}

// WriteChart writes the pictures of the campaign into dir, each as SVG
// and PNG: chart.* (median TPS against client count, one line per
// variant, with bars from the minimum to the maximum iteration; the client
// axis is logarithmic when the client counts span more than 8x, since they
// are usually powers of two), forest.* (each comparison's delta with its
// interval and the zero line) and timeline.* (the figure of merit of
// every run in run order, one series per variant, so drift and outliers
// show).
func WriteChart(dir string, r *Results) error {
	for _, c := range []struct {
		what     string
		svg, png string
		build    func(*Results) (*plot.Plot, error)
	}{
		{"chart", ChartSVGFile, ChartPNGFile, buildChart},
		{"forest plot", ForestSVGFile, ForestPNGFile, buildForest},
		{"run timeline", TimelineSVGFile, TimelinePNGFile, buildTimeline},
	} {
		p, err := c.build(r)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		if err := writePlot(dir, p, c.svg, c.png); err != nil {
			return err
		}
	}
	return nil
}

// writePlot writes p as SVG and PNG under the two names, atomically.
func writePlot(dir string, p *plot.Plot, svgName, pngName string) error {
	for _, f := range []struct{ name, format string }{{svgName, "svg"}, {pngName, "png"}} {
		wt, err := p.WriterTo(chartWidth, chartHeight, f.format)
		if err != nil {
			return fmt.Errorf("chart %s: %w", f.name, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, f.name), 0o644, func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// fixedTicks are labelled ticks at given places, those within the axis's
// range: one at each measured client count reads better than round
// numbers when the counts are 1, 16, 64, 256; one per row labels the
// forest plot's comparisons.
type fixedTicks []plot.Tick

func (t fixedTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for _, tk := range t {
		if tk.Value >= min && tk.Value <= max {
			ticks = append(ticks, tk)
		}
	}
	return ticks
}

// clientTicks is a tick at each client count.
func clientTicks(clients []int) fixedTicks {
	t := make(fixedTicks, len(clients))
	for i, c := range clients {
		t[i] = plot.Tick{Value: float64(c), Label: strconv.Itoa(c)}
	}
	return t
}

// errorPoints feeds plotter.NewYErrorBars: the median with distances to
// min and max.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// chartTitle names the workload the way every picture's title does.
func chartTitle(r *Results) string {
	switch {
	case r.Workload.Metric == MetricNOPM:
		return fmt.Sprintf("TPC-C, %s", plural(r.Workload.Warehouses, "warehouse"))
	case r.Workload.Scale > 0:
		return fmt.Sprintf("pgbench %s, scale %d", r.Workload.Mode, r.Workload.Scale)
	}
	return "pgbench " + r.Workload.Mode
}

func buildChart(r *Results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = chartTitle(r)
	p.X.Label.Text = "clients"
	metric := r.Workload.Metric
	p.Y.Label.Text = MetricLabel(metric) + " (median, min-max bars)"
	p.Legend.Top = true
	p.Legend.Left = true
	// Keep the legend off the Y axis labels.
	p.Legend.XOffs = vg.Points(12)
	p.Add(plotter.NewGrid())

	var clients []int
	maxTPS := 0.0
	for _, c := range r.Cells {
		for _, vc := range c.Variants {
			if _, _, hi, _, ok := figures(vc, metric); ok {
				if !slices.Contains(clients, c.Clients) {
					clients = append(clients, c.Clients)
				}
				maxTPS = max(maxTPS, hi)
			}
		}
	}
	slices.Sort(clients)
	if len(clients) == 0 {
		p.Title.Text += " (no runs yet)"
		return p, nil
	}
	lo, hi := float64(clients[0]), float64(clients[len(clients)-1])
	if hi/lo > 8 {
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = lo/1.5, hi*1.5
	} else {
		pad := max((hi-lo)*0.05, 1)
		p.X.Min, p.X.Max = max(lo-pad, 0), hi+pad
	}
	p.X.Tick.Marker = clientTicks(clients)
	p.Y.Min, p.Y.Max = 0, max(maxTPS*1.1, 1)

	// Lines join points left to right, whatever order the campaign used.
	cells := slices.Clone(r.Cells)
	slices.SortStableFunc(cells, func(a, b Cell) int { return a.Clients - b.Clients })
	for i, v := range r.Variants {
		var pts errorPoints
		for _, c := range cells {
			med, lo, hi, _, ok := figures(c.Variants[v.Name], metric)
			if !ok {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(c.Clients), Y: med})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{med - lo, hi - med})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		col := plotutil.Color(i)
		line.Color = col
		points.Color = col
		points.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		bars.Color = col
		p.Add(line, points, bars)
		p.Legend.Add(v.Name, line, points)
	}
	return p, nil
}

// xErrorPoints feeds plotter.NewXErrorBars: the delta with distances to
// the interval's ends.
type xErrorPoints struct {
	plotter.XYs
	plotter.XErrors
}

// forestRow is one comparison of the forest plot, top to bottom.
type forestRow struct {
	label         string
	delta, lo, hi float64
	ci            bool
}

// buildForest draws each comparison's delta, in percent, with its interval
// as a horizontal bar and a vertical line at 0: an interval that crosses
// the line is a no-difference, one that clears it a verdict.
func buildForest(r *Results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = chartTitle(r) + ": candidate vs baseline"
	p.X.Label.Text = MetricLabel(r.Workload.Metric) + " change, % (interval at each comparison's level)"
	p.Add(plotter.NewGrid())
	var rows []forestRow
	for _, c := range r.Cells {
		for _, cmp := range c.Comparisons {
			row := forestRow{label: fmt.Sprintf("%d clients: %s", c.Clients, cmp.Candidate), delta: cmp.DeltaPct}
			if cmp.CILowPct != nil && cmp.CIHighPct != nil {
				row.lo, row.hi, row.ci = *cmp.CILowPct, *cmp.CIHighPct, true
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		p.Title.Text += " (no comparisons yet)"
		return p, nil
	}
	// The first comparison on top.
	slices.Reverse(rows)
	labels := make(fixedTicks, len(rows))
	var pts plotter.XYs
	var bars xErrorPoints
	lo, hi := 0.0, 0.0
	for i, row := range rows {
		labels[i] = plot.Tick{Value: float64(i), Label: row.label}
		pts = append(pts, plotter.XY{X: row.delta, Y: float64(i)})
		lo, hi = min(lo, row.delta), max(hi, row.delta)
		if row.ci {
			bars.XYs = append(bars.XYs, plotter.XY{X: row.delta, Y: float64(i)})
			bars.XErrors = append(bars.XErrors, struct{ Low, High float64 }{row.delta - row.lo, row.hi - row.delta})
			lo, hi = min(lo, row.lo), max(hi, row.hi)
		}
	}
	pad := max((hi-lo)*0.08, 0.5)
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.Y.Min, p.Y.Max = -0.7, float64(len(rows))-0.3
	p.Y.Tick.Marker = labels
	zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.Y.Min}, {X: 0, Y: p.Y.Max}})
	if err != nil {
		return nil, err
	}
	zero.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(zero)
	if len(bars.XYs) > 0 {
		eb, err := plotter.NewXErrorBars(bars)
		if err != nil {
			return nil, err
		}
		eb.Color = plotutil.Color(1)
		p.Add(eb)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.Color = plotutil.Color(1)
	sc.Shape = draw.BoxGlyph{}
	p.Add(sc)
	return p, nil
}

// buildTimeline draws the figure of merit of every run against its place
// in the campaign's order, one series per variant: drift shows as a slope,
// an outlier as a point apart, a cell as a block of runs.
func buildTimeline(r *Results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = chartTitle(r) + ": every run in order"
	p.X.Label.Text = "run (campaign order)"
	p.Y.Label.Text = MetricLabel(r.Workload.Metric)
	// Bottom right, below the runs that the axis from 0 lifts.
	p.Legend.Top = false
	p.Add(plotter.NewGrid())
	byVariant := map[string]plotter.XYs{}
	top := 0.0
	for _, run := range r.Runs {
		v := run.Value(r.Workload.Metric)
		// A profiled extra run is left out of the statistics, and so here.
		if run.Profiled && r.Workload.Profile != "every-run" || !validValue(v) {
			continue
		}
		byVariant[run.Variant] = append(byVariant[run.Variant], plotter.XY{X: float64(run.Seq), Y: v})
		top = max(top, v)
	}
	if len(byVariant) == 0 {
		p.Title.Text += " (no runs yet)"
		return p, nil
	}
	p.Y.Min, p.Y.Max = 0, top*1.1
	for i, v := range r.Variants {
		xys := byVariant[v.Name]
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(sc)
		p.Legend.Add(v.Name, sc)
	}
	return p, nil
}
