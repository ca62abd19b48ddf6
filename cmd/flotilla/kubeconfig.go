package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/kubeconfig"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/tolerant"
)

// restConfig loads a kubeconfig as kubectl and clusteradm do: the file at path
// if given, else $KUBECONFIG, ~/.kube/config or the in-cluster config; context
// picks a context other than the current one.
func restConfig(path, context string) (*rest.Config, error) {
	return kubeconfig.RESTConfig(path, context)
}

// addHubKubeconfigFlags adds clusteradm's --kubeconfig and --context flags for
// commands that talk to the hub.
func addHubKubeconfigFlags(f *pflag.FlagSet, kubeconfig, context *string) {
	f.StringVar(kubeconfig, "kubeconfig", "", "hub kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(context, "context", "", "kubeconfig context")
}

// tolerantConfig wraps cfg so that the lists a command reads skip the objects
// that cannot be decoded into their Go type (see internal/tolerant) instead of
// failing whole: `flotilla get placements` still shows every good Placement.
// Each skipped object is named once on warn.
func tolerantConfig(cfg *rest.Config, warn io.Writer) (*rest.Config, error) {
	f, err := tolerant.New(tolerant.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	f.SetReporter(func(d tolerant.Dropped) {
		fmt.Fprintf(warn, "warning: %s is not listed: it cannot be decoded (%v); fix or delete it with kubectl\n", d, d.Err)
	})
	return f.Wrap(cfg), nil
}

// hubClient is a client of the hub for the CLI's commands; lists skip
// undecodable objects, naming each on warn (see tolerantConfig).
func hubClient(kubeconfig, kctx string, warn io.Writer) (client.Client, error) {
	cfg, err := restConfig(kubeconfig, kctx)
	if err != nil {
		return nil, err
	}
	if cfg, err = tolerantConfig(cfg, warn); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}
