// Package csr approves the CertificateSigningRequests of managed-cluster agents.
//
// Resource: certificates.k8s.io/v1 CertificateSigningRequest carrying the label
// open-cluster-management.io/cluster-name. It owns the Approved condition (reason
// AutoApprovedByHubCSRApprovingController) and no finalizer.
//
// Every decision is made by Evaluate, a pure function from the CSR and the facts
// the controller gathered (may the requester renew? is it an auto-approve user?
// what state is its cluster in: found, accepted, granted, denied, deleting, when
// last heard from, its grace) to a Verdict naming the check that failed.
// Renewals of accepted clusters are approved automatically. A CSR that fails a
// check is denied (reason FailedHubCSRCheck), except one for another signer,
// which is only reported. First CSRs wait for `flotilla accept` unless their
// requester is listed in Reconciler.AutoApproveUsers; then the rule of
// autoApprove applies: the hub accepts a cluster nobody decided on (annotation
// AutoAcceptedAnnotation = the CSR's UID) and approves the CSR once granted, and
// approves a first CSR for an accepted cluster only when its lease is stale by
// the health controller's measure (health.LastHeard, health.Grace,
// health.LeaseStale). A live, denied or deleting cluster's CSR is held: left
// pending, never approved nor denied, with an AutoApproveHeld event saying why,
// for `flotilla accept --force`.
package csr
