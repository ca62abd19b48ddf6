package main

import (
	"errors"
	"flag"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries a specific process exit code (for example 2 for "policy is
// NonCompliant") through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "flotilla",
		Short:         "Flotilla governs a fleet of Kubernetes clusters (Open Cluster Management compatible)",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var verbosity int
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "log verbosity, as kubectl's: 4 shows each watch opened and closed, 6 each request, 8 and up request and response bodies (which may hold secrets)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if verbosity < 0 {
			return errors.New("-v: verbosity cannot be negative")
		}
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		return fs.Set("v", strconv.Itoa(verbosity))
	}
	// One constructor per verb or noun, each in its own file.
	root.AddCommand(
		newDevCommand(),
		newPolicyCommand(),
		newGetCommand(),
		newCreateCommand(),
		newDeleteCommand(),
		newDescribeCommand(),
		newHubCommand(), newKlusterletCommand(), newInitCommand(), newJoinCommand(), newAcceptCommand(), newUnjoinCommand(),
		newClusterSetCommand(),
		newAddonCommand(), newAddonAgentCommand(),
		newComplianceCommand(),
		newSearchCommand(),
	)
	return root
}
