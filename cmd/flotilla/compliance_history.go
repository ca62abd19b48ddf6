package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// historyFlags are the flags that read the hub's compliance history.
type historyFlags struct {
	db, since string
}

func (h *historyFlags) add(f *pflag.FlagSet, sinceDefault, sinceHelp string) {
	f.StringVar(&h.db, "compliance-db", "", "the hub's compliance history: its SQLite file or a postgres:// URL (default: compliance.db in the hub's default --data-dir)")
	f.StringVar(&h.since, "since", sinceDefault, sinceHelp)
}

func (h *historyFlags) open(ctx context.Context) (history.Store, error) {
	db := h.db
	if db == "" {
		db = filepath.Join(defaultHubDataDir(), "compliance.db")
	}
	s, err := history.Open(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open the compliance history (--compliance-db): %w", err)
	}
	return s, nil
}

// reportHistory adds the history of the window to a report: what `compliance
// report --since` prints after (table), inside (json) or into (html) the report.
func reportHistory(ctx context.Context, h historyFlags, in compliance.Input, r *compliance.Report, now time.Time) (*history.Summary, error) {
	since, err := history.ParseSince(h.since, now)
	if err != nil {
		return nil, fmt.Errorf("--since: %w", err)
	}
	s, err := h.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	keep := policiesOf(r)
	return history.SummarizeWithTrend(ctx, s, history.Query{Since: since}, keep, r, in, 0)
}

// policiesOf accepts the root policies the (filtered) report holds.
func policiesOf(r *compliance.Report) func(string) bool {
	set := map[string]bool{}
	for _, s := range r.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				for _, p := range c.Policies {
					set[p] = true
				}
			}
		}
	}
	return func(p string) bool { return set[p] }
}

// renderWithHistory writes a report and its history in format.
func renderWithHistory(w io.Writer, format string, r *compliance.Report, o compliance.RenderOptions, sum *history.Summary) error {
	switch format {
	case compliance.FormatJSON:
		if o.By == compliance.ByCluster {
			return fmt.Errorf("--since with --by cluster: use -o table or the default --by control")
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(web.Document{Report: r, History: sum})
	case compliance.FormatHTML:
		return web.WriteHTML(w, &web.Document{Report: r, History: sum})
	case compliance.FormatTable:
		if err := compliance.Render(w, format, r, o); err != nil {
			return err
		}
		fmt.Fprintln(w)
		sum.Trend = nil // the table's trend is per control: `compliance history --control`
		return history.WriteTable(w, sum)
	}
	return fmt.Errorf("--since does not apply to -o %s: use table, json or html", format)
}

// newComplianceHistoryCommand is `flotilla compliance history`.
func newComplianceHistoryCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		h                        historyFlags
		q                        history.Query
		control                  string
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "What changed since a date, remediations and time to remediate, when clusters became NonCompliant, a control over time",
		Long: `Read the compliance history the hub records (flotilla hub --compliance-db): the
transitions since --since, the NonCompliant -> Compliant periods that ended in
the window and their mean time to remediate, and per cluster when it last
became NonCompliant. --control reads the policies mapped to the control from
the hub and adds the control's counts over time. --cluster alone also says when
that cluster last became NonCompliant in its whole recorded history.`,
		Example: `  flotilla compliance history --since 30d
  flotilla compliance history --since 2026-11-01 --cluster west -o json
  flotilla compliance history --control CM-2 --since 7d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output format %q: use table or json", output)
			}
			ctx := cmd.Context()
			now := time.Now()
			since, err := history.ParseSince(h.since, now)
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			q.Since = since
			s, err := h.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			var keep func(string) bool
			var r *compliance.Report
			var in compliance.Input
			if control != "" {
				c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if in, err = compliance.Read(ctx, c); err != nil {
					return err
				}
				in.Now = now
				r = compliance.Build(in, compliance.Filter{Control: control})
				keep = policiesOf(r)
			}
			sum, err := history.Summarize(ctx, s, q, keep)
			if err != nil {
				return err
			}
			if r != nil {
				if sum.Trend, err = history.LoadTrend(ctx, s, r, in, since, 0, keep); err != nil {
					return err
				}
			}
			var last *time.Time
			if q.Cluster != "" && q.Policy == "" && q.Template == "" {
				at, ok, err := history.LastBecameNonCompliant(ctx, s, history.Query{Cluster: q.Cluster})
				if err != nil {
					return err
				}
				if ok {
					last = &at
				}
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					*history.Summary
					LastBecameNonCompliant *time.Time `json:"lastBecameNonCompliant,omitempty"`
				}{sum, last})
			}
			if q.Cluster != "" && q.Policy == "" && q.Template == "" {
				when := "never"
				if last != nil {
					when = last.UTC().Format("2006-01-02 15:04Z")
				}
				fmt.Fprintf(out, "%s last became NonCompliant: %s\n", q.Cluster, when)
			}
			return history.WriteTable(out, sum)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	h.add(f, "30d", "window start: a duration back from now (30d, 2w, 12h) or a date (2026-11-01)")
	f.StringVar(&q.Cluster, "cluster", "", "only this cluster")
	f.StringVar(&q.Policy, "policy", "", "only this root policy (namespace/name)")
	f.StringVar(&control, "control", "", "only the policies mapped to this control (AC-6) or family (AC), read from the hub, with the control's counts over time")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
