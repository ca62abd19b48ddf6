// Package bindings reconciles ManagedClusterSetBindings (cluster.open-cluster-management.io/v1beta2)
// and guards their creation.
//
// It owns the condition Bound: True (reason ClusterSetBound) when the named
// ManagedClusterSet exists, False (reason ClusterSetNotFound) otherwise. No finalizer.
//
// Admission (path /validate-managedclustersetbinding): creating a binding, or
// pointing one at another set, requires the requester to be allowed `create` on
// `managedclustersets/bind` for that set (checked with a SubjectAccessReview), and
// the binding must be named after its set.
package bindings
