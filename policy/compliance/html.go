package compliance

import (
	_ "embed"
	"html/template"
	"io"
	"strconv"
	"strings"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"stateClass": func(s State) string { return strings.ToLower(string(s)) },
	"join":       strings.Join,
	"anchor":     anchor,
}).Parse(htmlSource))

// Heat map geometry, in SVG user units.
const (
	cellSize   = 18
	rowLabelW  = 220
	colLabelH  = 90
	barWidth   = 200
	barHeight  = 12
	labelLimit = 34
)

// htmlView is what the template renders: the report plus geometry computed here,
// so the page needs no script.
type htmlView struct {
	*Report
	Totals   Counts
	Families []familyView
	Heat     heatView
	// Coverage has one row per family of the baseline section.
	Coverage []coverageView
}

type coverageView struct {
	Family *FamilyCoverage
	Bars   []barView
}

type familyView struct {
	Standard string
	Family   *Family
	Bars     []barView
}

type barView struct {
	Class   string
	X, W    int
	Count   int
	Caption string
}

type heatView struct {
	Width, Height int
	Columns       []heatColumn
	Rows          []heatRow
}

type heatColumn struct {
	Name string
	// X is the column's left edge; LabelX its centre, where the name is written.
	X, LabelX int
}

type heatRow struct {
	Label, Title string
	Y            int
	Cells        []heatCell
}

type heatCell struct {
	X     int
	Class string
	Title string
}

// WriteHTML writes the report as one self-contained HTML page: inline CSS and
// SVG, no script and no external asset, usable offline and on a narrow screen.
func WriteHTML(w io.Writer, r *Report) error {
	return htmlTemplate.Execute(w, newHTMLView(r))
}

func newHTMLView(r *Report) htmlView {
	v := htmlView{Report: r}
	col := map[string]int{}
	for i, c := range r.Clusters {
		col[c] = i
		v.Heat.Columns = append(v.Heat.Columns, heatColumn{Name: c, X: rowLabelW + i*cellSize, LabelX: rowLabelW + i*cellSize + cellSize/2})
	}
	for i := range r.Standards {
		s := &r.Standards[i]
		for j := range s.Families {
			f := &s.Families[j]
			v.Totals.Compliant += f.Counts.Compliant
			v.Totals.NonCompliant += f.Counts.NonCompliant
			v.Totals.Pending += f.Counts.Pending
			v.Families = append(v.Families, familyView{Standard: s.Name, Family: f, Bars: bars(f.Counts)})
			for k := range f.Controls {
				c := &f.Controls[k]
				row := heatRow{Label: truncate(c.Label(), labelLimit), Title: s.Name + " " + c.Label(), Y: colLabelH + len(v.Heat.Rows)*cellSize}
				for _, cell := range c.Clusters {
					row.Cells = append(row.Cells, heatCell{
						X: rowLabelW + col[cell.Cluster]*cellSize, Class: strings.ToLower(string(cell.State)),
						Title: c.Label() + " on " + cell.Cluster + ": " + string(cell.State),
					})
				}
				v.Heat.Rows = append(v.Heat.Rows, row)
			}
		}
	}
	if r.Baseline != nil {
		for i := range r.Baseline.Families {
			f := &r.Baseline.Families[i]
			v.Coverage = append(v.Coverage, coverageView{Family: f, Bars: segmentBars([]segment{
				{"compliant", f.Met, "met"}, {"noncompliant", f.Covered - f.Met, "covered, not met"}, {"unknown", f.InBaseline - f.Covered, "not covered"},
			})})
		}
	}
	v.Heat.Width = rowLabelW + len(r.Clusters)*cellSize + cellSize
	v.Heat.Height = colLabelH + len(v.Heat.Rows)*cellSize + 2
	return v
}

// bars splits a bar of barWidth between compliant, noncompliant and pending;
// the last segment takes the rounding.
func bars(c Counts) []barView {
	return segmentBars([]segment{{"compliant", c.Compliant, "compliant"}, {"noncompliant", c.NonCompliant, "noncompliant"}, {"pending", c.Pending, "pending"}})
}

// segment is one part of a stacked bar: its CSS class, count and caption.
type segment struct {
	class string
	n     int
	what  string
}

// segmentBars splits a bar of barWidth between the segments; the last drawn
// segment takes the rounding.
func segmentBars(segs []segment) []barView {
	total := 0
	for _, p := range segs {
		total += p.n
	}
	if total == 0 {
		return nil
	}
	var out []barView
	x := 0
	for _, p := range segs {
		if p.n == 0 {
			continue
		}
		w := p.n * barWidth / total
		out = append(out, barView{Class: p.class, X: x, W: w, Count: p.n, Caption: strconv.Itoa(p.n) + " " + p.what})
		x += w
	}
	out[len(out)-1].W += barWidth - x
	return out
}

// anchor makes an HTML id from parts: lower case letters, digits and dashes.
func anchor(parts ...string) string {
	var b strings.Builder
	b.WriteString("f-")
	for _, r := range strings.ToLower(strings.Join(parts, " ")) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
