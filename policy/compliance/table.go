package compliance

import (
	"fmt"
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
	if err := printer.WriteTable(w, rows); err != nil {
		return err
	}
	return writeBaselineTable(w, r.Baseline)
}

// WriteClusterTable writes the --by cluster pivot: per cluster, the controls
// compliant, noncompliant and pending, and the noncompliant ones.
func WriteClusterTable(w io.Writer, r *Report) error {
	rows := printer.Rows{Header: []string{"CLUSTER", "COMPLIANT", "NONCOMPLIANT", "PENDING", "NONCOMPLIANT CONTROLS"}}
	for _, c := range r.ByCluster().Clusters {
		rows.Add(c.Cluster, strconv.Itoa(c.Counts.Compliant), strconv.Itoa(c.Counts.NonCompliant),
			strconv.Itoa(c.Counts.Pending), orNone(strings.Join(c.NonCompliant, ", ")))
	}
	if err := printer.WriteTable(w, rows); err != nil {
		return err
	}
	return writeBaselineTable(w, r.Baseline)
}

// writeBaselineTable writes the baseline section, when there is one: a title
// line with the totals, then per family the controls in the baseline, covered
// and met, and the IDs of those not met and not covered.
func writeBaselineTable(w io.Writer, cov *Coverage) error {
	if cov == nil {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nBASELINE %s (%s; catalog %s): %d controls, %d covered, %d met\n\n",
		cov.Baseline, cov.Source, cov.Catalog, cov.InBaseline, cov.Covered, cov.Met); err != nil {
		return err
	}
	rows := printer.Rows{Header: []string{"FAMILY", "IN BASELINE", "COVERED", "MET", "NOT MET", "UNCOVERED"}}
	for _, f := range cov.Families {
		rows.Add(f.Label(), strconv.Itoa(f.InBaseline), strconv.Itoa(f.Covered), strconv.Itoa(f.Met),
			orNone(strings.Join(f.WithStatus(BaselineNotMet), ",")), orNone(strings.Join(f.WithStatus(BaselineUncovered), ",")))
	}
	rows.Add("TOTAL", strconv.Itoa(cov.InBaseline), strconv.Itoa(cov.Covered), strconv.Itoa(cov.Met), "-", "-")
	return printer.WriteTable(w, rows)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
