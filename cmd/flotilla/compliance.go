package main

import (
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/nist"
)

// newComplianceCommand is `flotilla compliance`, reports on the fleet's
// compliance by standard, family and control.
func newComplianceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compliance",
		Short: "Compliance reports by standard, family and control (NIST SP 800-53, NIST-CSF, ...)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newComplianceReportCommand(), newComplianceHistoryCommand(), newComplianceVerifyCommand())
	return cmd
}

// newComplianceReportCommand is `flotilla compliance report`.
func newComplianceReportCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		baseline                 string
		filter                   compliance.Filter
		render                   compliance.RenderOptions
		hist                     historyFlags
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report each control's compliance per cluster, from the policies' standards/categories/controls annotations",
		Example: `  flotilla compliance report
  flotilla compliance report --standard "NIST SP 800-53" --control AC-6
  flotilla compliance report --by cluster --clusters east,west
  flotilla compliance report -o html > report.html
  flotilla compliance report --baseline moderate
  flotilla compliance report --baseline my-profile.json -o oscal > assessment-results.json
  flotilla compliance report --since 30d --compliance-db .flotilla/hub/compliance.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := render.Validate(output); err != nil {
				return err
			}
			var b *nist.Baseline
			if baseline != "" {
				var err error
				if b, err = nist.Default().LoadBaseline(baseline); err != nil {
					return err
				}
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if hist.since != "" { // with the hub's history (compliance_history.go)
				in, err := compliance.Read(cmd.Context(), c)
				if err != nil {
					return err
				}
				in.Now = time.Now()
				r := compliance.Build(in, filter)
				sum, err := reportHistory(cmd.Context(), hist, in, r, in.Now)
				if err != nil {
					return err
				}
				return renderWithHistory(cmd.OutOrStdout(), output, r, render, sum)
			}
			r, err := compliance.Load(cmd.Context(), c, filter, time.Now())
			if err != nil {
				return err
			}
			if b != nil {
				r.Baseline = compliance.Cover(r, b, filter)
			}
			return compliance.Render(cmd.OutOrStdout(), output, r, render)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVar(&filter.Standard, "standard", "", `only this standard (e.g. "NIST SP 800-53", NIST-CSF; spellings are normalised)`)
	f.StringVar(&filter.Control, "control", "", "only this control and its enhancements (AC-6), or family (AC)")
	f.StringSliceVar(&filter.Clusters, "clusters", nil, "only these clusters (comma-separated)")
	f.StringVar(&render.By, "by", compliance.ByControl, "rows per control or per cluster (table and json)")
	f.StringVar(&baseline, "baseline", "", "report coverage of a NIST SP 800-53 rev5 baseline: low, moderate, high, privacy, or an OSCAL profile file (JSON)")
	f.StringVarP(&output, "output", "o", compliance.FormatTable, "output format: table, csv, json, html or oscal (OSCAL assessment-results)")
	hist.add(f, "", "add the history from this date: a duration back (30d, 2w, 12h) or a date (2026-11-01); what changed, remediations, and trend lines in html (reads --compliance-db)")
	return cmd
}
