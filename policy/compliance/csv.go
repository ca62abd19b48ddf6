package compliance

import (
	"encoding/csv"
	"io"
	"strings"
)

// CSVHeader is the CSV schema (compliance.flotilla.dev/v1): one row per
// standard, control and cluster; a control no cluster reports on has one row
// with empty cluster and state. Multi-valued cells are joined with "; ".
// Columns are only ever added at the end.
var CSVHeader = []string{
	"standard", "family_id", "family_title", "control_id", "control_title",
	"cluster", "state", "policies", "violating_policies", "messages",
}

// WriteCSV writes the report as CSV with CSVHeader.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	var err error
	r.eachControl(func(s *Standard, f *Family, c *Control) {
		base := []string{s.Name, f.ID, f.Title, c.ID, c.Title}
		policies := strings.Join(c.Policies, "; ")
		if len(c.Clusters) == 0 {
			err = firstErr(err, cw.Write(append(base, "", "", policies, "", "")))
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
				strings.Join(violators, "; "), strings.Join(messages, "; "))))
		}
	})
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
