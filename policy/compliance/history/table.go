package history

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteTable writes the summary as text: the totals, what changed, the
// remediations, the clusters and, when there is one trend control, its counts
// over time. Times are UTC.
func WriteTable(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	mttr := "-"
	if len(s.Remediations) > 0 {
		mttr = Human(s.MeanTimeToRemediate)
	}
	p("Since %s: %d changes, %d remediated, mean time to remediate %s\n", stamp(s.Since), len(s.Changes), len(s.Remediations), mttr)
	if len(s.Changes) > 0 {
		p("\nTIME\tCLUSTER\tPOLICY\tTEMPLATE\tFROM\tTO\n")
		for _, c := range s.Changes {
			from := string(c.From)
			if from == "" {
				from = "-"
			}
			p("%s\t%s\t%s\t%s\t%s\t%s\n", stamp(c.Time), c.Cluster, c.Policy, dash(c.Template), from, c.State)
		}
	}
	if len(s.Remediations) > 0 {
		p("\nREMEDIATED\tCLUSTER\tPOLICY\tTEMPLATE\tNONCOMPLIANT AT\tTOOK\n")
		for _, r := range s.Remediations {
			p("%s\t%s\t%s\t%s\t%s\t%s\n", stamp(r.CompliantAt), r.Cluster, r.Policy, dash(r.Template), stamp(r.NonCompliantAt), Human(r.Duration))
		}
	}
	if len(s.Clusters) > 0 {
		p("\nCLUSTER\tCHANGES\tREMEDIATED\tLAST BECAME NONCOMPLIANT\n")
		for _, c := range s.Clusters {
			last := "-"
			if !c.LastBecameNonCompliant.IsZero() {
				last = stamp(c.LastBecameNonCompliant)
			}
			p("%s\t%d\t%d\t%s\n", c.Cluster, c.Changes, c.Remediated, last)
		}
	}
	if s.Trend != nil && len(s.Trend.Controls) > 0 && len(s.Trend.Controls) <= 3 {
		for _, c := range s.Trend.Controls {
			p("\n%s %s over time\nTIME\tCOMPLIANT\tNONCOMPLIANT\tPENDING\n", c.Standard, c.Control)
			for _, pt := range c.Points {
				p("%s\t%d\t%d\t%d\n", stamp(pt.Time), pt.Compliant, pt.NonCompliant, pt.Pending)
			}
		}
	}
	return tw.Flush()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Human prints a duration in its two largest units: "3d 4h", "2h 5m", "40s".
func Human(d time.Duration) string {
	if d < time.Minute {
		return strconv.Itoa(int(d/time.Second)) + "s"
	}
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh %dm", hours, mins)
	}
	return fmt.Sprintf("%dm", mins)
}
