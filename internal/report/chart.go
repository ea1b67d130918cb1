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

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
)

// Chart size. At gonum/plot's default 96 dpi the PNG is 768x480 pixels.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 5 * vg.Inch
)

// ChartPixels is the size of chart.png in pixels.
var ChartPixels = [2]int{768, 480}

// WriteChart writes chart.svg and chart.png into dir: median TPS against
// client count, one line per variant, with bars from the minimum to the
// maximum iteration. The client axis is logarithmic when the client
// counts span more than 8x, since they are usually powers of two.
func WriteChart(dir string, r *Results) error {
	p, err := buildChart(r)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	for _, f := range []struct{ name, format string }{{ChartSVGFile, "svg"}, {ChartPNGFile, "png"}} {
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

// clientTicks puts one labelled tick at each measured client count, which
// reads better than round numbers when the counts are 1, 16, 64, 256.
type clientTicks []int

func (t clientTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for _, c := range t {
		if v := float64(c); v >= min && v <= max {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.Itoa(c)})
		}
	}
	return ticks
}

// errorPoints feeds plotter.NewYErrorBars: the median with distances to
// min and max.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

func buildChart(r *Results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "pgbench " + r.Workload.Mode
	switch {
	case r.Workload.Metric == MetricNOPM:
		p.Title.Text = fmt.Sprintf("TPC-C, %s", plural(r.Workload.Warehouses, "warehouse"))
	case r.Workload.Scale > 0:
		p.Title.Text += fmt.Sprintf(", scale %d", r.Workload.Scale)
	}
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
