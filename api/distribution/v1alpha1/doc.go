// Package v1alpha1 holds Flotilla's own API group flotilla.dev/v1alpha1 and
// its one kind, DistributionPolicy: how a ManifestWorkReplicaSet's template
// changes per cluster (overrides) and how the replicas of its workloads are
// divided among the clusters (replica division). OCM's CRDs stay unchanged:
// a ManifestWorkReplicaSet opts in with the annotation
// flotilla.dev/distribution-policy naming a DistributionPolicy of its own
// namespace (PolicyAnnotation); hub/workreplicaset applies it when it renders
// each cluster's ManifestWork.
//
// The CRD in manifests/crds/flotilla is generated from these types by
// hack/generate-policy-crds.sh (controller-gen); never edit it by hand.
//
// +kubebuilder:object:generate=true
// +groupName=flotilla.dev
package v1alpha1
