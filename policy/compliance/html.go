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
	"stateClass":  stateClass,
	"join":        strings.Join,
	"anchor":      anchor,
	"clusterRows": clusterRows,
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

// heatView is the heat map. Its body (column labels, a row per control, a
// cell per placed cluster) is written here rather than by the template: tens
// of thousands of cells on a large fleet.
type heatView struct {
	Width, Height int
	// Left, Top and Cell place the grid of empty cells (an SVG pattern).
	Left, Top, Cell int
	Body            template.HTML
}

// WriteHTML writes the report as one self-contained HTML page: inline CSS and
// SVG, no script and no external asset, usable offline and on a narrow screen.
func WriteHTML(w io.Writer, r *Report) error {
	return htmlTemplate.Execute(w, newHTMLView(r))
}

func newHTMLView(r *Report) htmlView {
	v := htmlView{Report: r}
	col := make(map[string]int, len(r.Clusters))
	var b strings.Builder
	b.Grow(64*len(r.Clusters) + 128*countCells(r))
	for i, c := range r.Clusters {
		col[c] = i
		b.WriteString("\n<text transform=\"translate(")
		b.WriteString(strconv.Itoa(rowLabelW + i*cellSize + cellSize/2))
		b.WriteString(" 86) rotate(-60)\">")
		writeEscaped(&b, c)
		b.WriteString("</text>")
	}
	rows := 0
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
				label := c.Label()
				y := strconv.Itoa(colLabelH + rows*cellSize)
				rows++
				b.WriteString("\n<g><title>")
				writeEscaped(&b, s.Name+" "+label)
				b.WriteString(`</title><text x="0" y="`)
				b.WriteString(y)
				b.WriteString(`" dy="13">`)
				writeEscaped(&b, truncate(label, labelLimit))
				b.WriteString(`</text>`)
				if len(r.Clusters) > 0 {
					b.WriteString(`<rect class="bg cells" x="` + strconv.Itoa(rowLabelW) + `" y="` + y + `" width="` + strconv.Itoa(len(r.Clusters)*cellSize-2) + `" height="16"/>`)
				}
				for _, cell := range c.Clusters {
					class := stateClass(cell.State)
					b.WriteString(`<rect class="`)
					b.WriteString(class)
					b.WriteString(`" x="`)
					b.WriteString(strconv.Itoa(rowLabelW + col[cell.Cluster]*cellSize))
					b.WriteString(`" y="`)
					b.WriteString(y)
					b.WriteString(`" width="16" height="16"><title>`)
					writeEscaped(&b, label)
					b.WriteString(" on ")
					writeEscaped(&b, cell.Cluster)
					b.WriteString(": ")
					writeEscaped(&b, string(cell.State))
					b.WriteString("</title></rect>")
				}
				b.WriteString("</g>")
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
	v.Heat = heatView{Width: rowLabelW + len(r.Clusters)*cellSize + cellSize, Height: colLabelH + rows*cellSize + 2,
		Left: rowLabelW, Top: colLabelH, Cell: cellSize, Body: template.HTML(b.String())} // #nosec G203 -- every value escaped by writeEscaped
	return v
}

func countCells(r *Report) int {
	n := 0
	for _, s := range r.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				n += len(c.Clusters)
			}
		}
	}
	return n
}

func stateClass(s State) string { return strings.ToLower(string(s)) }

// clusterRows is a control's drill-down: a row per cluster where it is not
// Compliant, with the violating policies' latest messages, then one row
// naming the clusters where it is.
func clusterRows(c Control) template.HTML {
	var b strings.Builder
	var compliant []string
	for _, cell := range c.Clusters {
		if cell.State == Compliant {
			compliant = append(compliant, cell.Cluster)
			continue
		}
		b.WriteString("\n<tr><td>")
		writeEscaped(&b, cell.Cluster)
		b.WriteString(`</td><td class="`)
		b.WriteString(stateClass(cell.State))
		b.WriteString(`">`)
		writeEscaped(&b, string(cell.State))
		b.WriteString("</td><td>")
		for _, v := range cell.Violations {
			b.WriteString("<div><strong>")
			writeEscaped(&b, v.Policy)
			b.WriteString("</strong>")
			if v.Template != "" {
				b.WriteString(" · ")
				writeEscaped(&b, v.Template)
			}
			if !v.Time.IsZero() {
				b.WriteString(" · ")
				b.WriteString(v.Time.Format("2006-01-02 15:04:05Z"))
			}
			if v.Message != "" {
				b.WriteString(`<div class="msg">`)
				writeEscaped(&b, v.Message)
				b.WriteString("</div>")
			}
			b.WriteString("</div>")
		}
		b.WriteString("</td></tr>")
	}
	if len(compliant) > 0 {
		b.WriteString(`
<tr><td colspan="3"><span class="compliant">Compliant</span> on `)
		b.WriteString(strconv.Itoa(len(compliant)))
		if len(compliant) == 1 {
			b.WriteString(" cluster: ")
		} else {
			b.WriteString(" clusters: ")
		}
		for i, name := range compliant {
			if i > 0 {
				b.WriteString(", ")
			}
			writeEscaped(&b, name)
		}
		b.WriteString("</td></tr>")
	}
	return template.HTML(b.String()) // #nosec G203 -- every value escaped by writeEscaped
}

// writeEscaped writes s escaped for HTML text and attribute values (as
// html/template escapes them).
func writeEscaped(b *strings.Builder, s string) {
	if !strings.ContainsAny(s, "<>&'\"\x00") {
		b.WriteString(s)
		return
	}
	b.WriteString(htmlEscaper.Replace(s))
}

var htmlEscaper = strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;", "'", "&#39;", `"`, "&#34;", "\x00", "\uFFFD")

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
