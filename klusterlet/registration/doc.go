// Package registration is the klusterlet's registration agent: it joins a managed
// cluster to the hub through the OCM CSR double opt-in and keeps it joined.
//
// On the hub it creates the cluster's ManagedCluster and a CSR with the OCM
// subject, waits (by watch) for the certificate, then renews the Lease
// managed-cluster-lease and reports the ManagedCluster status: conditions
// ManagedClusterJoined, ManagedClusterConditionAvailable (probing the managed
// apiserver's /livez), ClusterCertificateRotated, plus Kubernetes version,
// capacity/allocatable and ClusterClaims. On the managed cluster it keeps the
// credential in the Secret hub-kubeconfig-secret (agent namespace). The
// certificate is renewed when 20% of its life remains; when the credential stops
// working the agent falls back to the bootstrap kubeconfig and asks again.
//
// Restarting the agent at any point is safe: a pending private key is kept in the
// secret, and a pending CSR for it is found again instead of making a new one.
package registration
