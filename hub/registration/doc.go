// Package registration wires the hub side of cluster registration: the CSR double
// opt-in (csr, signer), acceptance and cleanup of ManagedClusters (cluster), the
// heartbeat and taints (health) and the admission webhook guarding
// spec.hubAcceptsClient (webhook). Setup registers them all with a manager.
//
// The identities, names and conditions follow Open Cluster Management exactly, so
// OCM tooling (clusteradm accept, clusteradm get clusters) works unchanged.
package registration
