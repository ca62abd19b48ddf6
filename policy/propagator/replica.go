package propagator

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Annotations a replica never inherits from its root.
var notCopied = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// Replica builds root's replica for cluster (its namespace is the cluster's
// name) with the remediationAction override ("" or "enforce"). The templates
// are the root's: hub templates are resolved by the caller.
func Replica(root *policyv1.Policy, cluster, override string) *policyv1.Policy {
	all := root.Spec.CopyPolicyMetadata == nil || *root.Spec.CopyPolicyMetadata
	copyMeta := func(in map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range in {
			if notCopied[k] || !all && !strings.HasPrefix(k, policyv1.GroupName+"/") {
				continue
			}
			out[k] = v
		}
		return out
	}
	r := &policyv1.Policy{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RootKey(root.Namespace, root.Name),
			Namespace:   cluster,
			Labels:      copyMeta(root.Labels),
			Annotations: copyMeta(root.Annotations),
		},
		Spec: *root.Spec.DeepCopy(),
	}
	r.Labels[policyv1.RootPolicyLabel] = r.Name
	r.Labels[policyv1.ClusterNameLabel] = cluster
	r.Labels[policyv1.ClusterNamespaceLabel] = cluster
	if len(r.Annotations) == 0 {
		r.Annotations = nil
	}
	if override != "" {
		r.Spec.RemediationAction = policyv1.RemediationAction(override)
	}
	return r
}

// ReplicaUpToDate reports whether the live replica carries want's spec, labels
// and annotations (its status is the spoke's and is not compared).
func ReplicaUpToDate(live, want *policyv1.Policy) bool {
	return equality.Semantic.DeepEqual(live.Spec, want.Spec) &&
		sameMap(live.Labels, want.Labels) && sameMap(live.Annotations, want.Annotations)
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// IsWellFormedReplica reports whether p has the shape of a replica the
// propagator writes: named after the root-policy label (<rootNs>.<rootName>),
// with cluster-name and cluster-namespace labels, when set, equal to its
// namespace. Anyone who may create Policies can put the labels on one; only
// this shape, in the namespace of a cluster the root is placed on, is a
// replica's, so a Policy labelled for another root's or another cluster's
// replica is not taken for it (and two Policies of a namespace can never both
// claim the same root).
func IsWellFormedReplica(p *policyv1.Policy) bool {
	root, ok := p.Labels[policyv1.RootPolicyLabel]
	if !ok || root != p.Name {
		return false
	}
	if ns, name, ok := strings.Cut(root, "."); !ok || ns == "" || name == "" {
		return false
	}
	for _, l := range []string{policyv1.ClusterNameLabel, policyv1.ClusterNamespaceLabel} {
		if v, ok := p.Labels[l]; ok && v != p.Namespace {
			return false
		}
	}
	return true
}

// IsReplica reports whether p is a replica (it carries the root-policy label).
func IsReplica(p *policyv1.Policy) bool {
	_, ok := p.Labels[policyv1.RootPolicyLabel]
	return ok
}
