package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// verifyBroken is `compliance verify`'s exit code when a link is broken (1
// stays for errors, as `policy dryrun` keeps 2 for NonCompliant).
const verifyBroken = 2

// newComplianceVerifyCommand is `flotilla compliance verify`.
func newComplianceVerifyCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output, head string
		h                              historyFlags
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the compliance history's hash chain: every recorded transition, its order and the store's head",
		Long: `Check that the compliance history is what the hub recorded (NIST SP 800-53
AU-9, AU-10): every transition is chained to the one recorded before it in its
series, and every recorded transition and prune is folded into the store's
head. An edited transition no longer matches its hash; a removed or inserted
one breaks the link of the one after it, or its series' head. verify names
the first broken link and exits 2 when any is broken, 0 when the whole store
holds. It reads the whole history, so through the hub (the default: the
aggregated API compliance.flotilla.dev, as the kubeconfig's user) it needs the
right to list policies in all namespaces; --compliance-db reads the database
directly instead.

--head checks that the store still holds the history an earlier report was
computed from (the OSCAL assessment results carry its head as
history-chain-head): the store's head must have passed through it (since the
last prune).`,
		Example: `  flotilla compliance verify
  flotilla compliance verify --head 3f6c...e1 -o json
  flotilla compliance verify --compliance-db .flotilla/hub/compliance.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output format %q: use table or json", output)
			}
			var v history.Verification
			if h.db == "" { // through the hub, as the user
				cfg, err := restConfig(kubeconfig, kctx)
				if err != nil {
					return err
				}
				c, err := apigroup.NewClient(cfg)
				if err != nil {
					return err
				}
				if v, err = c.Verify(cmd.Context(), head); err != nil {
					return err
				}
			} else {
				s, err := h.open(cmd.Context())
				if err != nil {
					return err
				}
				defer s.Close()
				var heads []string
				if head != "" {
					heads = append(heads, head)
				}
				if v, err = s.Verify(cmd.Context(), heads...); err != nil {
					return err
				}
			}
			if err := writeVerification(cmd.OutOrStdout(), output, v); err != nil {
				return err
			}
			if !v.OK() {
				return &exitError{code: verifyBroken, err: fmt.Errorf("the compliance history's chain is broken at %d link(s); the first: %s", v.BrokenLinks, v.Broken)}
			}
			if head != "" {
				at, ok := v.Found[head]
				if !ok {
					if v.Base.Seq > 0 {
						return &exitError{code: verifyBroken, err: fmt.Errorf("--head %s: not among the store's heads since its last prune (after event %d): the history that report was computed from is not the one stored, or the report predates that prune (compare its history-chain-seq with %d: a head that old cannot be checked from what the store holds)", head, v.Base.Seq, v.Base.Seq)}
					}
					return &exitError{code: verifyBroken, err: fmt.Errorf("--head %s: the store's chain never passed through this head: the history that report was computed from is not the one stored", head)}
				}
				if output == "table" { // JSON has it in "found"
					fmt.Fprintf(cmd.OutOrStdout(), "Head given:  found at event %d: the store holds that history and %d events since\n", at, v.Head.Seq-at)
				}
			}
			return nil
		},
	}
	addHubKubeconfigFlags(cmd.Flags(), &kubeconfig, &kctx)
	h.add(cmd.Flags(), "", "")
	_ = cmd.Flags().MarkHidden("since")
	cmd.Flags().StringVar(&head, "head", "", "a chain head an earlier report carried (OSCAL history-chain-head): the store's head must still be it")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// writeVerification prints what verify found.
func writeVerification(w io.Writer, format string, v history.Verification) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	state := "whole"
	if !v.OK() {
		state = fmt.Sprintf("BROKEN (%d links)", v.BrokenLinks)
	}
	fmt.Fprintf(w, "Chain:       %s\n", state)
	fmt.Fprintf(w, "Transitions: %d in %d series\n", v.Events, v.Series)
	if v.Unchained > 0 {
		fmt.Fprintf(w, "Unchained:   %d (recorded before the chain existed; it cannot vouch for them)\n", v.Unchained)
	}
	fmt.Fprintf(w, "Head:        %s (event %d)\n", orDash(v.Head.Hash), v.Head.Seq)
	if v.Broken != nil {
		fmt.Fprintf(w, "First break: %s\n", v.Broken)
	}
	return nil
}
