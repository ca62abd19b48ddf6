// Command flotilla-search-agent is the flotilla command line cut down to one
// subcommand, `addon-agent search`: the fleet search addon's agent, in a
// binary that links only what the agent needs, so the Pod on every managed
// cluster stays small (docs/search.md, "The agent's memory"). Its command
// line is flotilla's, so the addon's Deployment and a process run next to
// the klusterlet (`flotilla dev`) share one rendering. The flotilla image
// carries it beside the flotilla binary.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/agent"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{Use: "flotilla-search-agent", Short: "The fleet search agent: flotilla's `addon-agent search` alone",
		SilenceUsage: true, SilenceErrors: true}
	addonAgent := &cobra.Command{Use: "addon-agent", Short: "Run the agent of an addon Flotilla ships"}
	addonAgent.AddCommand(agent.NewCommand(ocm.SearchAddon))
	root.AddCommand(addonAgent)
	return root
}
