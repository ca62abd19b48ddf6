package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// historyFlags are the flags that read the hub's compliance history.
type historyFlags struct {
	db, since string
}

func (h *historyFlags) add(f *pflag.FlagSet, sinceDefault, sinceHelp string) {
	f.StringVar(&h.db, "compliance-db", "", "read the hub's compliance history offline, from its SQLite file or a postgres:// URL, instead of through the hub's aggregated API")
	f.StringVar(&h.since, "since", sinceDefault, sinceHelp)
}

func (h *historyFlags) open(ctx context.Context) (history.Store, error) {
	s, err := history.Open(ctx, h.db)
	if err != nil {
		return nil, fmt.Errorf("open the compliance history (--compliance-db): %w", err)
	}
	return s, nil
}

// newComplianceHistoryCommand is `flotilla compliance history`.
func newComplianceHistoryCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		h                        historyFlags
		cluster, policy, control string
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "What changed since a date, remediations and time to remediate, when clusters became NonCompliant, a control over time",
		Long: `Read the compliance history the hub records: the transitions since --since, the
NonCompliant -> Compliant periods that ended in the window and their mean time
to remediate, and per cluster when it last became NonCompliant. --control keeps
the policies mapped to the control and adds the control's counts over time.
--cluster alone also says when that cluster last became NonCompliant in its
whole recorded history.

The history is read through the hub's aggregated API (compliance.flotilla.dev),
as the kubeconfig's user: it holds the policies of the namespaces the user may
list. --compliance-db reads the hub's database directly instead (offline).`,
		Example: `  flotilla compliance history --since 30d
  flotilla compliance history --since 2026-11-01 --cluster west -o json
  flotilla compliance history --control CM-2 --since 7d
  flotilla compliance history --compliance-db ~/.local/state/flotilla/hub/compliance.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(document.HistoryFormats, output) {
				return fmt.Errorf("unknown output format %q: use %s", output, strings.Join(document.HistoryFormats, " or "))
			}
			q := url.Values{document.ParamSince: {h.since}}
			set(q, document.ParamCluster, cluster)
			set(q, document.ParamPolicy, policy)
			set(q, document.ParamControl, control)
			now := time.Now()
			o, err := document.ParseHistoryQuery(q, now, 0)
			if err != nil {
				return flagError(err)
			}
			ctx := cmd.Context()
			var doc *document.HistoryDocument
			if h.db == "" {
				cfg, err := restConfig(kubeconfig, kctx)
				if err != nil {
					return err
				}
				c, err := apigroup.NewClient(cfg)
				if err != nil {
					return err
				}
				if doc, err = c.History(ctx, q); err != nil {
					return err
				}
			} else {
				src := document.Source{}
				if src.History, err = h.open(ctx); err != nil {
					return err
				}
				defer src.History.Close()
				if control != "" { // the policies mapped to the control are read from the hub
					c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
					if err != nil {
						return err
					}
					if src.Input, err = compliance.Read(ctx, c); err != nil {
						return err
					}
					src.Input.Now = now
				}
				if doc, err = document.BuildHistory(ctx, src, o); err != nil {
					return err
				}
			}
			return document.RenderHistory(cmd.OutOrStdout(), output, doc)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	h.add(f, "30d", "window start: a duration back from now (30d, 2w, 12h) or a date (2026-11-01)")
	f.StringVar(&cluster, "cluster", "", "only this cluster")
	f.StringVar(&policy, "policy", "", "only this root policy (namespace/name)")
	f.StringVar(&control, "control", "", "only the policies mapped to this control (AC-6) or family (AC), with the control's counts over time")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
