package console

import (
	"fmt"
	"html/template"
	"strings"
)

// chart is a stacked bar chart drawn on the server as SVG: no script, readable without colour
// (each series has a pattern-free but distinct shade and a legend), and always shown beside a
// table of the same numbers for screen readers and for exact values.
type chart struct {
	Title string
	// Corner heads the table's column of labels (When, Day).
	Corner string
	Labels []string // one per bar (a day, a minute)
	Series []chartSeries
}

// Row is a bar's numbers, for the table beside the chart.
type Row struct {
	Label  string
	Counts []int64
}

// Rows are the chart's numbers, a row per bar.
func (c chart) Rows() []Row {
	out := make([]Row, len(c.Labels))
	for i, l := range c.Labels {
		out[i].Label = l
		for _, s := range c.Series {
			out[i].Counts = append(out[i].Counts, s.Values[i])
		}
	}
	return out
}

type chartSeries struct {
	Name   string
	Class  string // the stylesheet's colour for it
	Values []int64
}

const (
	chartWidth  = 640
	chartHeight = 220
	chartPad    = 28
)

// SVG draws the chart.
func (c chart) SVG() template.HTML {
	var top int64
	for i := range c.Labels {
		var sum int64
		for _, s := range c.Series {
			sum += s.Values[i]
		}
		top = max(top, sum)
	}
	if top == 0 {
		top = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="none">`,
		chartWidth, chartHeight, template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, chartPad, chartHeight-chartPad, chartWidth, chartHeight-chartPad)
	fmt.Fprintf(&b, `<text x="2" y="12" class="tick">%d</text><text x="2" y="%d" class="tick">0</text>`, top, chartHeight-chartPad)
	n := max(len(c.Labels), 1)
	slot := float64(chartWidth-chartPad) / float64(n)
	barW := max(slot*0.8, 1)
	plot := float64(chartHeight - 2*chartPad)
	for i, label := range c.Labels {
		x := float64(chartPad) + float64(i)*slot + (slot-barW)/2
		y := float64(chartHeight - chartPad)
		for _, s := range c.Series {
			h := float64(s.Values[i]) / float64(top) * plot
			if h <= 0 {
				continue
			}
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="%s"><title>%s · %s: %d</title></rect>`,
				x, y, barW, h, s.Class, template.HTMLEscapeString(label), template.HTMLEscapeString(s.Name), s.Values[i])
		}
		// A label under the first, the last and every few bars.
		if i == 0 || i == len(c.Labels)-1 || (n > 8 && i%(n/4) == 0) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick">%s</text>`, x, chartHeight-8, template.HTMLEscapeString(label))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // every text in it is escaped above
}

func init() { funcs["chart"] = func(c *chart) template.HTML { return c.SVG() } }
