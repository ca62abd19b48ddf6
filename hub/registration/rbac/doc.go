// Package rbac builds, without any I/O, the RBAC objects of registration: the
// bootstrap identity's ClusterRole and bindings, and each accepted cluster's
// ClusterRole/ClusterRoleBinding and its registration and work RoleBindings.
//
// Every builder is a pure function of the cluster name so the least-privilege
// rules can be read in one place and are table-tested.
package rbac
