package compliance

import (
	"encoding/csv"
	"io"
	"strings"

	"flotilla.dev/flotilla/policy/compliance/nist"
)

// CSVHeader is the CSV schema (compliance.flotilla.dev/v1): one row per
// standard, control and cluster; a control no cluster reports on has one row
// with empty cluster and state. Multi-valued cells are joined with "; ".
// Columns are only ever added at the end. With a baseline, baseline_status is
// met, not-met or uncovered on the rows of its controls (empty elsewhere), and
// each baseline control no policy covers has a row of its own.
var CSVHeader = []string{
	"standard", "family_id", "family_title", "control_id", "control_title",
	"cluster", "state", "policies", "violating_policies", "messages",
	"baseline_status",
}

// WriteCSV writes the report as CSV with CSVHeader.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	var err error
	inBaseline := r.baselineControls()
	status := r.baselineStatus()
	r.eachControl(func(s *Standard, f *Family, c *Control) {
		base := []string{s.Name, f.ID, f.Title, c.ID, c.Title}
		policies := strings.Join(c.Policies, "; ")
		bs := ""
		if s.Name == nist.Standard && inBaseline[c.ID] {
			bs = status(c.ID)
		}
		if len(c.Clusters) == 0 {
			err = firstErr(err, cw.Write(append(base, "", "", policies, "", "", bs)))
			return
		}
		for _, cell := range c.Clusters {
			var violators, messages []string
			for _, v := range cell.Violations {
				violators = appendOnce(violators, v.Policy)
				if v.Message != "" {
					messages = append(messages, v.Message)
				}
			}
			err = firstErr(err, cw.Write(append(base, cell.Cluster, string(cell.State), policies,
				strings.Join(violators, "; "), strings.Join(messages, "; "), bs)))
		}
	})
	// Baseline controls no policy covers: one row each.
	if r.Baseline != nil {
		for _, f := range r.Baseline.Families {
			for _, c := range f.Uncovered {
				err = firstErr(err, cw.Write([]string{nist.Standard, f.ID, f.Title, c.ID, c.Title, "", "", "", "", "", BaselineUncovered}))
			}
		}
	}
	cw.Flush()
	return firstErr(err, cw.Error())
}

func appendOnce(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// baselineControls is the set of IDs in r's baseline section.
func (r *Report) baselineControls() map[string]bool {
	out := map[string]bool{}
	if r.Baseline == nil {
		return out
	}
	for _, f := range r.Baseline.Families {
		for _, c := range f.Controls {
			out[c.ID] = true
		}
	}
	return out
}
