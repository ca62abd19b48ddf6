// Package v1beta1 holds Flotilla's Go types for the governance API group
// policy.open-cluster-management.io/v1beta1: PolicySet, a named group of
// Policies of one namespace that a PlacementBinding places together. Wire
// compatible with Open Cluster Management.
//
// The CRDs in manifests/crds/policy are generated from these types by
// hack/generate-policy-crds.sh (controller-gen); never edit them by hand.
//
// +kubebuilder:object:generate=true
// +groupName=policy.open-cluster-management.io
package v1beta1
