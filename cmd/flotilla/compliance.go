package main

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/document"
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
		Long: `Report each control's compliance per cluster. Without --since the policies are
read from the hub apiserver (listing policies in all namespaces). With --since
the report and its history come from the hub's aggregated API
(compliance.flotilla.dev), as the kubeconfig's user: it holds the policies of
the namespaces the user may list. --compliance-db reads the hub's history
database directly instead (offline).`,
		Example: `  flotilla compliance report
  flotilla compliance report --standard "NIST SP 800-53" --control AC-6
  flotilla compliance report --by cluster --clusters east,west
  flotilla compliance report -o html > report.html
  flotilla compliance report --baseline moderate --since 7d
  flotilla compliance report --baseline my-profile.json -o oscal > assessment-results.json
  flotilla compliance report --since 30d --compliance-db .flotilla/hub/compliance.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := render.Validate(output); err != nil {
				return err
			}
			// The flags become the query parameters the hub's API reads, checked
			// by the same code here first.
			q := url.Values{}
			set(q, document.ParamStandard, filter.Standard)
			set(q, document.ParamControl, filter.Control)
			set(q, document.ParamClusters, strings.Join(filter.Clusters, ","))
			if cmd.Flags().Changed("since") {
				q.Set(document.ParamSince, hist.since)
			}
			var profile *nist.Baseline // a profile file is applied here: the hub cannot read it
			if baseline != "" {
				if _, builtIn := nist.Default().Baseline(baseline); builtIn {
					q.Set(document.ParamBaseline, baseline)
				} else {
					var err error
					if profile, err = nist.Default().LoadBaseline(baseline); err != nil {
						return err
					}
				}
			}
			now := time.Now()
			o, err := document.ParseQuery(q, now, 0)
			if err != nil {
				return flagError(err)
			}
			ctx := cmd.Context()
			var doc *document.Document
			if o.History && hist.db == "" {
				cfg, err := restConfig(kubeconfig, kctx)
				if err != nil {
					return err
				}
				c, err := apigroup.NewClient(cfg)
				if err != nil {
					return err
				}
				if doc, err = c.Report(ctx, q); err != nil {
					return err
				}
			} else {
				c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				src := document.Source{}
				if src.Input, err = compliance.Read(ctx, c); err != nil {
					return err
				}
				src.Input.Now = now
				if o.History {
					if src.History, err = hist.open(ctx); err != nil {
						return err
					}
					defer src.History.Close()
				}
				if doc, err = document.Build(ctx, src, o); err != nil {
					return err
				}
			}
			if profile != nil {
				doc.Report.Baseline = compliance.Cover(doc.Report, profile, o.Filter)
			}
			return document.Render(cmd.OutOrStdout(), output, doc, render)
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
	hist.add(f, "", "add the history from this date: a duration back (30d, 2w, 12h) or a date (2026-11-01); what changed, remediations, and trend lines in html (read through the hub's aggregated API, or --compliance-db)")
	return cmd
}

// set sets a query parameter when v is not empty.
func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// flagError says a query parameter's problem in flag words: the flags and
// parameters share their names.
func flagError(err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "query parameter "); ok {
		return errors.New("--" + rest)
	}
	return err
}
