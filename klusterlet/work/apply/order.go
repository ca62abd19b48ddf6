package apply

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindOrder lists the kinds the agent knows, in the order they are applied:
// cluster-scoped foundations first (a CustomResourceDefinition before anything
// that could be one of its resources, a Namespace before anything inside it),
// then RBAC, then namespaced identity and policy, configuration and storage,
// networking, workloads, and finally admission webhooks and APIServices, which
// can make the apiserver call out to workloads that must exist first.
// Kinds not listed (custom resources, for example) come after all of these.
var kindOrder = []schema.GroupKind{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	{Kind: "Namespace"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "storage.k8s.io", Kind: "StorageClass"},
	{Group: "storage.k8s.io", Kind: "CSIDriver"},
	{Kind: "PersistentVolume"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
	{Kind: "ServiceAccount"},
	{Kind: "ResourceQuota"},
	{Kind: "LimitRange"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
	{Group: "policy", Kind: "PodDisruptionBudget"},
	{Kind: "Secret"},
	{Kind: "ConfigMap"},
	{Kind: "PersistentVolumeClaim"},
	{Kind: "Service"},
	{Kind: "Endpoints"},
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"},
	{Group: "networking.k8s.io", Kind: "IngressClass"},
	{Group: "networking.k8s.io", Kind: "Ingress"},
	{Group: "apps", Kind: "DaemonSet"},
	{Kind: "Pod"},
	{Kind: "ReplicationController"},
	{Group: "apps", Kind: "ReplicaSet"},
	{Group: "apps", Kind: "Deployment"},
	{Group: "apps", Kind: "StatefulSet"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
	{Group: "batch", Kind: "Job"},
	{Group: "batch", Kind: "CronJob"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
}

var kindRank = func() map[schema.GroupKind]int {
	m := make(map[schema.GroupKind]int, len(kindOrder))
	for i, gk := range kindOrder {
		m[gk] = i
	}
	return m
}()

// Rank is the apply rank of a kind: lower applies earlier. Kinds the agent does
// not know rank after every known kind.
func Rank(gk schema.GroupKind) int {
	if r, ok := kindRank[gk]; ok {
		return r
	}
	return len(kindOrder)
}

// Order returns the indexes of kinds in the order they should be applied: by
// Rank, and in manifest order among equal ranks. kinds[i] is the kind of
// manifest i (the zero GroupKind for a manifest that could not be decoded,
// which ranks as unknown).
func Order(kinds []schema.GroupKind) []int {
	idx := make([]int, len(kinds))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return Rank(kinds[idx[a]]) < Rank(kinds[idx[b]])
	})
	return idx
}
