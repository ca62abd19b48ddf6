// Package cluster accepts, denies and cleans up managed clusters on the hub.
//
// Resource: cluster.open-cluster-management.io/v1 ManagedCluster.
// Conditions owned: HubAcceptedManagedCluster (HubClusterAdminAccepted /
// HubClusterAdminDenied) and Deleting (ResourceRemaining / NoResource / DeletingError).
// Finalizer: cluster.open-cluster-management.io/api-resource-cleanup.
//
// When spec.hubAcceptsClient is true the cluster gets its namespace, its
// ClusterRole/ClusterRoleBinding and the registration and work RoleBindings (see
// hub/registration/rbac). Whenever it is false the ClusterRole (if any) is
// read-only and the RoleBindings are gone: the deny is driven by spec alone and
// re-applied on every reconcile, never by the status the agent itself may write. Deleting the ManagedCluster removes its add-ons, then
// its works, then its RBAC and namespace, then the finalizer.
package cluster
