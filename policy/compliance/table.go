package compliance

import (
	"io"
	"strconv"
	"strings"

	"flotilla.dev/flotilla/internal/printer"
)

// WriteTable writes one row per control, grouped by standard and family (a
// standard or family is named on its first row only), with the clusters
// compliant, noncompliant and pending (or unknown) and the violating clusters.
func WriteTable(w io.Writer, r *Report) error {
	rows := printer.Rows{Header: []string{"STANDARD", "FAMILY", "CONTROL", "COMPLIANT", "NONCOMPLIANT", "PENDING", "VIOLATING CLUSTERS"}}
	lastStd, lastFam := "", ""
	r.eachControl(func(s *Standard, f *Family, c *Control) {
		std, fam := s.Name, f.Label()
		if std == lastStd {
			std = ""
			if fam == lastFam {
				fam = ""
			} else {
				lastFam = fam
			}
		} else {
			lastStd, lastFam = std, fam
		}
		rows.Add(std, fam, c.Label(), strconv.Itoa(c.Counts.Compliant), strconv.Itoa(c.Counts.NonCompliant),
			strconv.Itoa(c.Counts.Pending), orNone(strings.Join(c.ViolatingClusters(), ",")))
	})
	return printer.WriteTable(w, rows)
}

// WriteClusterTable writes the --by cluster pivot: per cluster, the controls
// compliant, noncompliant and pending, and the noncompliant ones.
func WriteClusterTable(w io.Writer, r *Report) error {
	rows := printer.Rows{Header: []string{"CLUSTER", "COMPLIANT", "NONCOMPLIANT", "PENDING", "NONCOMPLIANT CONTROLS"}}
	for _, c := range r.ByCluster().Clusters {
		rows.Add(c.Cluster, strconv.Itoa(c.Counts.Compliant), strconv.Itoa(c.Counts.NonCompliant),
			strconv.Itoa(c.Counts.Pending), orNone(strings.Join(c.NonCompliant, ", ")))
	}
	return printer.WriteTable(w, rows)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
