package document

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

//go:embed history.html.tmpl
var historySource string

var historyTemplate = template.Must(template.New("history").Funcs(template.FuncMap{
	"stateClass": func(s compliance.State) string { return strings.ToLower(string(s)) },
	"when":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") },
	"duration":   history.Human,
	"sub":        func(a, b int) int { return a - b },
}).Parse(historySource))

// The history section goes before the report's families, or at the end of the
// body when the report's page changes shape.
const (
	insertBefore = `<h2 id="families">`
	bodyEnd      = `</body>`
)

// Limits of the tables on the page (the JSON has everything).
const (
	maxChanges      = 100
	maxRemediations = 50
)

// WriteHTML writes the report's self-contained page (compliance.WriteHTML)
// with, when doc has a history, a section of trend lines and changes.
func WriteHTML(w io.Writer, doc *Document) error {
	var page bytes.Buffer
	page.Grow(pageSize(doc.Report))
	if err := compliance.WriteHTML(&page, doc.Report); err != nil {
		return err
	}
	if doc.History == nil {
		_, err := w.Write(page.Bytes())
		return err
	}
	var section bytes.Buffer
	if err := WriteHistorySection(&section, doc.History); err != nil {
		return err
	}
	html := page.Bytes()
	at := bytes.Index(html, []byte(insertBefore))
	if at < 0 {
		if at = bytes.LastIndex(html, []byte(bodyEnd)); at < 0 {
			at = len(html)
		}
	}
	for _, part := range [][]byte{html[:at], section.Bytes(), html[at:]} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// pageSize estimates the report page's size: about 160 bytes per heat-map
// cell and drill-down entry, plus the rest.
func pageSize(r *compliance.Report) int {
	n := 64 << 10
	for _, s := range r.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				n += 160 * len(c.Clusters)
			}
		}
	}
	return n
}

// WriteHistorySection writes the history's HTML section alone: the fleet's
// trend, a sparkline per family, what changed and what was remediated.
func WriteHistorySection(w io.Writer, s *history.Summary) error {
	return historyTemplate.Execute(w, newHistoryView(s))
}

// Chart geometry, in SVG user units (the SVG scales to the page's width).
const (
	chartW, chartH           = 640, 180
	chartLeft, chartBottom   = 44, 22
	chartTop, chartRight     = 8, 8
	sparkW, sparkH, sparkPad = 140, 26, 2
)

type historyView struct {
	*history.Summary
	Chart    *chartView
	Families []familyTrend
	Changes  []history.Transition
	Rems     []history.Remediation
	// More* count the rows left out of the tables.
	MoreChanges, MoreRems int
}

type chartView struct {
	W, H, Left, Top, Right, Bottom int
	Lines                          []lineView
	Ticks                          []tickView
	FromLabel, ToLabel             string
	ToX                            int
}

type lineView struct {
	Class, Stroke, Points, Label string
	Now                          int
}

type tickView struct {
	Y     int
	Label string
}

type familyTrend struct {
	Standard, Family string
	NonCompliantNow  int
	Spark            string
	Max              int
}

func newHistoryView(s *history.Summary) historyView {
	v := historyView{Summary: s}
	// Changes are oldest first and remediations in the order they ended
	// (Summarize): the newest are the last ones.
	v.Changes = newestFirst(s.Changes, maxChanges)
	v.MoreChanges = len(s.Changes) - len(v.Changes)
	v.Rems = newestFirst(s.Remediations, maxRemediations)
	v.MoreRems = len(s.Remediations) - len(v.Rems)
	if s.Trend != nil && len(s.Trend.Total) > 1 {
		v.Chart = chart(s.Trend)
		v.Families = familyTrends(s.Trend)
	}
	return v
}

// newestFirst returns the last n of list (oldest first) newest first.
func newestFirst[T any](list []T, n int) []T {
	n = min(n, len(list))
	out := make([]T, n)
	for i := range out {
		out[i] = list[len(list)-1-i]
	}
	return out
}

func chart(t *history.Trend) *chartView {
	c := &chartView{W: chartW, H: chartH, Left: chartLeft, Top: chartTop, Right: chartW - chartRight, Bottom: chartH - chartBottom,
		FromLabel: t.From.UTC().Format("2006-01-02"), ToLabel: t.To.UTC().Format("2006-01-02")}
	c.ToX = c.Right
	maxV := 1
	for _, p := range t.Total {
		maxV = max(maxV, p.Compliant, p.NonCompliant, p.Pending)
	}
	n := len(t.Total)
	x := func(i int) int { return c.Left + (c.Right-c.Left)*i/(n-1) }
	y := func(v int) int { return c.Bottom - (c.Bottom-c.Top)*v/maxV }
	for _, l := range []struct {
		class, stroke, label string
		get                  func(history.Point) int
	}{
		{"compliant", "#2e7d32", "compliant", func(p history.Point) int { return p.Compliant }},
		{"noncompliant", "#c62828", "noncompliant", func(p history.Point) int { return p.NonCompliant }},
		{"pending", "#f9a825", "pending or unknown", func(p history.Point) int { return p.Pending }},
	} {
		var pts []string
		for i, p := range t.Total {
			pts = append(pts, strconv.Itoa(x(i))+","+strconv.Itoa(y(l.get(p))))
		}
		c.Lines = append(c.Lines, lineView{Class: l.class, Stroke: l.stroke, Points: strings.Join(pts, " "), Label: l.label, Now: l.get(t.Total[n-1])})
	}
	for _, v := range []int{0, maxV / 2, maxV} {
		c.Ticks = append(c.Ticks, tickView{Y: y(v), Label: strconv.Itoa(v)})
	}
	return c
}

// familyTrends sums the controls' noncompliant counts per family and draws
// each as a sparkline.
func familyTrends(t *history.Trend) []familyTrend {
	type key struct{ std, fam string }
	sums := map[key][]int{}
	var order []key
	for _, c := range t.Controls {
		k := key{c.Standard, c.Family}
		if _, ok := sums[k]; !ok {
			sums[k] = make([]int, len(c.Points))
			order = append(order, k)
		}
		for i, p := range c.Points {
			sums[k][i] += p.NonCompliant
		}
	}
	var out []familyTrend
	for _, k := range order {
		vals := sums[k]
		maxV := 1
		for _, v := range vals {
			maxV = max(maxV, v)
		}
		var pts []string
		for i, v := range vals {
			x := sparkPad + (sparkW-2*sparkPad)*i/max(1, len(vals)-1)
			y := sparkH - sparkPad - (sparkH-2*sparkPad)*v/maxV
			pts = append(pts, strconv.Itoa(x)+","+strconv.Itoa(y))
		}
		out = append(out, familyTrend{Standard: k.std, Family: k.fam, NonCompliantNow: vals[len(vals)-1], Spark: strings.Join(pts, " "), Max: maxV})
	}
	return out
}
