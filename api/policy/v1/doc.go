// Package v1 holds Flotilla's Go types for the governance API group
// policy.open-cluster-management.io/v1, wire-compatible with Open Cluster
// Management's policy framework so that policies from the public
// policy-collection apply unchanged.
//
// Today it defines ConfigurationPolicy (evaluated on a managed cluster by
// policy/configpolicy). Policy and PlacementBinding (this group, v1) and
// PolicySet (v1beta1, a sibling package) are added beside it: each kind gets
// its own <kind>_types.go file and registers itself in init() through
// SchemeBuilder.Register, so nothing here changes when they arrive.
//
// The CRDs in manifests/crds/policy are generated from these types by
// hack/generate-policy-crds.sh (controller-gen); never edit them by hand.
//
// +kubebuilder:object:generate=true
// +groupName=policy.open-cluster-management.io
package v1
