// Package distribute renders a ManifestWorkReplicaSet's template for each
// cluster under a DistributionPolicy (flotilla.dev/v1alpha1): it applies the
// policy's overrides and divides the replicas of its workloads. It is pure:
// the ManifestWorkReplicaSet controller reads the policy and the clusters and
// calls Render; every function here is table-tested without an apiserver.
//
// # Overrides
//
// For each cluster, the rules of spec.overrides are applied in list order to
// every template manifest both their clusters and their manifests select;
// within a rule: images, labels, annotations, command, args, then jsonPatch.
// A value may hold templates (Expand): {{ cluster.name }},
// {{ cluster.labels[KEY] }} and {{ cluster.claims[NAME] }}. A rule that
// cannot be applied (a missing label or claim, a patch path that does not
// exist, a JSON patch test that fails) fails that cluster's render with an
// error naming the rule and the manifest; the controller then leaves the
// cluster's work as it is.
//
// # Replica division
//
// Divide splits a total over clusters in proportion to weights with the
// largest remainder method (ties broken by cluster name), so the shares
// always add up to the total and a cluster that leaves gives its share to the
// others in proportion. Weighted takes static weights (ReplicaDivision
// weights); Capacity takes how many pod replicas fit in each cluster's
// allocatable resources (Fit) and is sticky (Rebalance): while the clusters
// and the total do not change, the previous assignment stays, and when they
// do, the assignment moves as few replicas as it can.
package distribute
