// Package signer is the hub's built-in certificate signer, for hubs whose
// kube-controller-manager does not sign kubernetes.io/kube-apiserver-client CSRs.
//
// Resource: certificates.k8s.io/v1 CertificateSigningRequest (approved, signer
// kubernetes.io/kube-apiserver-client, label open-cluster-management.io/cluster-name,
// no certificate yet). It writes status.certificate; no conditions, no finalizer.
// The CA must be one the hub apiserver trusts for client certificates
// (--client-ca-file). Sign is pure and table-tested.
package signer
