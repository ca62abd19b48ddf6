package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/generator"
)

// pluginName is the name kustomize runs a PolicyGenerator exec plugin by
// (.../kustomize/plugin/policy.open-cluster-management.io/v1/policygenerator/PolicyGenerator).
const pluginName = "PolicyGenerator"

func newPolicyGenerateCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "generate CONFIG|DIR...",
		Short: "Generate Policies, PolicySets, Placements and PlacementBindings from PolicyGenerator configurations",
		Long: `Reads PolicyGenerator configurations (apiVersion policy.open-cluster-management.io/v1,
kind PolicyGenerator: the format of OCM's policy-generator kustomize plugin and of
policy-collection's policy sets) and prints the objects they describe, the same
ones upstream's generator writes: Policies, PolicySets, Placements and
PlacementBindings, ready for kubectl apply -f -.

A DIR with a kustomization (policy-collection's policy sets have one) is built as
kustomize build --enable-alpha-plugins builds it with the PolicyGenerator plugin:
the configurations its generators list are generated, and kustomize adds what
the kustomization says (labels, annotations, namespace, patches). Another DIR
stands for every *.yaml and *.yml file in it whose kind is PolicyGenerator; a
file is one configuration, generated as the plugin alone would.

Manifest and placement paths are relative to the configuration file's directory
and must stay inside it; a manifest path is a file, a directory of YAML files,
or a kustomize directory (built with no plugins and no remote resources).

As a kustomize exec plugin: link or copy the binary to
$XDG_CONFIG_HOME/kustomize/plugin/policy.open-cluster-management.io/v1/policygenerator/PolicyGenerator
and run kustomize build --enable-alpha-plugins; called by that name, flotilla
generates from the configuration kustomize hands it.`,
		Example: `  flotilla policy generate policy-sets/stable/acm-hardening | kubectl apply -f -
  flotilla policy generate policyGenerator.yaml -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			objs, err := generator.Paths(args, generator.Options{})
			if err != nil {
				return err
			}
			switch output {
			case "yaml":
				return generator.Write(cmd.OutOrStdout(), objs)
			case "json":
				return generator.WriteJSON(cmd.OutOrStdout(), objs)
			default:
				return fmt.Errorf("-o %s: the output format must be yaml or json", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (a stream of documents) or json (a v1 List)")
	return cmd
}

// runAsPlugin runs flotilla as kustomize's PolicyGenerator exec plugin when
// it is called by that name: kustomize passes the configuration's file and
// runs the plugin in the kustomization's directory, which manifest paths are
// relative to. It reports whether it ran.
func runAsPlugin(args []string, out io.Writer) (bool, error) {
	if filepath.Base(args[0]) != pluginName {
		return false, nil
	}
	if len(args) < 2 {
		return true, fmt.Errorf("usage: %s <policy-generator-config-file>...", pluginName)
	}
	dir, err := os.Getwd()
	if err != nil {
		return true, err
	}
	var objs []map[string]any
	for _, f := range args[1:] {
		o, err := generator.File(f, generator.Options{BaseDir: dir})
		if err != nil {
			return true, err
		}
		objs = append(objs, o...)
	}
	return true, generator.Write(out, objs)
}
