package document

import (
	"fmt"
	"io"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Render writes a report document in format: the report alone when it has
// no history, else the report and its history after it (table), inside it
// (json) or in it as trend lines and tables (html). csv and oscal have no
// place for a history.
func Render(w io.Writer, format string, doc *Document, o compliance.RenderOptions) error {
	if doc.History == nil {
		return compliance.Render(w, format, doc.Report, o)
	}
	if err := o.Validate(format); err != nil {
		return err
	}
	switch format {
	case compliance.FormatJSON:
		if o.By == compliance.ByCluster {
			return fmt.Errorf("--since with --by cluster: use -o table or the default --by control")
		}
		return compliance.WriteJSON(w, doc)
	case compliance.FormatHTML:
		return WriteHTML(w, doc)
	case compliance.FormatTable:
		if err := compliance.Render(w, format, doc.Report, o); err != nil {
			return err
		}
		fmt.Fprintln(w)
		sum := *doc.History
		sum.Trend = nil // the table's trend is per control: `compliance history --control`
		return history.WriteTable(w, &sum)
	}
	return fmt.Errorf("--since does not apply to -o %s: use table, json or html", format)
}

// HistoryFormats are the formats RenderHistory writes.
var HistoryFormats = []string{compliance.FormatTable, compliance.FormatJSON}

// RenderHistory writes a history document as a table or JSON.
func RenderHistory(w io.Writer, format string, doc *HistoryDocument) error {
	switch format {
	case compliance.FormatJSON:
		return compliance.WriteJSON(w, doc)
	case compliance.FormatTable:
		if doc.Cluster != "" {
			when := "never"
			if doc.LastBecameNonCompliant != nil {
				when = doc.LastBecameNonCompliant.UTC().Format("2006-01-02 15:04Z")
			}
			fmt.Fprintf(w, "%s last became NonCompliant: %s\n", doc.Cluster, when)
		}
		return history.WriteTable(w, doc.Summary)
	}
	return fmt.Errorf("unknown output format %q: use table or json", format)
}
