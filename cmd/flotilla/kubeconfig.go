package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig loads a kubeconfig as kubectl and clusteradm do: the file at path
// if given, else $KUBECONFIG, ~/.kube/config or the in-cluster config; context
// picks a context other than the current one.
func restConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// addHubKubeconfigFlags adds clusteradm's --kubeconfig and --context flags for
// commands that talk to the hub.
func addHubKubeconfigFlags(f *pflag.FlagSet, kubeconfig, context *string) {
	f.StringVar(kubeconfig, "kubeconfig", "", "hub kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(context, "context", "", "kubeconfig context")
}
