// Package webhook is the hub's validating admission webhook for ManagedClusters.
//
// Resource: cluster.open-cluster-management.io/v1 ManagedCluster, CREATE and UPDATE
// (not the status subresource). It denies:
//   - setting spec.hubAcceptsClient=true (at create, or turning it on) by a user
//     who may not `update` register.open-cluster-management.io managedclusters/accept;
//   - setting or changing the label cluster.open-cluster-management.io/clusterset by
//     a user who may not `create` managedclustersets/join for that set;
//   - a ManagedCluster whose name is not a DNS label (it becomes a namespace).
//
// Permission checks are SubjectAccessReviews against the hub apiserver, so RBAC
// is the single source of truth. It owns no conditions and no finalizer.
package webhook
