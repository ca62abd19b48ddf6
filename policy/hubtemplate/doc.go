// Package hubtemplate resolves Open Cluster Management hub templates,
// {{hub ... hub}}, in a policy template for one managed cluster, as the hub's
// propagator does before it writes the cluster's replica.
//
// Context: .ManagedClusterName and .ManagedClusterLabels. Functions: fromSecret
// NAMESPACE NAME KEY (the Secret's base64 value, encrypted with protect),
// fromConfigMap NAMESPACE NAME KEY, fromClusterClaim NAME (a claim the
// ManagedCluster reports), lookup APIVERSION KIND NAMESPACE NAME (the object
// as a map, empty when it does not exist), protect (AES-CBC with the cluster's
// key, "$ocm_encrypted:<base64>"), base64enc, base64dec. Every read is
// restricted to the policy's namespace (an empty namespace means it), plus
// the cluster's own ManagedCluster: a hub template cannot read another
// namespace's Secrets.
//
// Resolve is pure apart from its Source; it returns the objects read, so the
// caller can resolve again when one of them changes.
package hubtemplate
