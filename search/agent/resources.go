package agent

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultResources are what the agent watches unless told otherwise: the
// common workload, network, configuration and RBAC kinds, Namespaces and
// Nodes. Secrets are watched as metadata only: their data never reaches
// the agent, let alone the hub.
var DefaultResources = []string{
	"namespaces", "nodes", "pods", "services", "configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims",
	"deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps",
	"jobs.batch", "cronjobs.batch",
	"ingresses.networking.k8s.io", "networkpolicies.networking.k8s.io",
	"roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
	"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
}

// resource is a watched resource as discovery found it.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// metadataOnly: watched as PartialObjectMetadata (Secrets).
	metadataOnly bool
}

// metadataOnly are the resources whose content never leaves the cluster.
var metadataOnly = map[schema.GroupResource]bool{{Resource: "secrets"}: true}

// candidates are what name may mean, in kubectl's order: resource.version.group
// first (when it has two dots or more), then resource.group.
func candidates(name string) []schema.GroupVersionResource {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil
	}
	gvr, gr := schema.ParseResourceArg(name)
	var out []schema.GroupVersionResource
	if gvr != nil {
		out = append(out, *gvr)
	}
	return append(out, gr.WithVersion(""))
}

// resolve finds each name's preferred version, kind and scope with mapper;
// names the cluster does not serve are returned apart (a CRD not installed).
func resolve(mapper meta.RESTMapper, names []string) (found []resource, missing []string, err error) {
	seen := map[schema.GroupResource]bool{}
	for _, n := range names {
		cs := candidates(n)
		if len(cs) == 0 {
			return nil, nil, fmt.Errorf("an empty resource name in %q", strings.Join(names, ","))
		}
		var gvr schema.GroupVersionResource
		err := fmt.Errorf("not served")
		for _, want := range cs {
			if gvr, err = mapper.ResourceFor(want); err == nil {
				break
			}
		}
		if err != nil {
			missing = append(missing, n)
			continue
		}
		if seen[gvr.GroupResource()] {
			continue
		}
		seen[gvr.GroupResource()] = true
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			missing = append(missing, n)
			continue
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			missing = append(missing, n)
			continue
		}
		found = append(found, resource{gvr: gvr, kind: gvk.Kind, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace,
			metadataOnly: metadataOnly[gvr.GroupResource()]})
	}
	return found, missing, nil
}
