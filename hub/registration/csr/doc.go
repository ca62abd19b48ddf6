// Package csr approves the CertificateSigningRequests of managed-cluster agents.
//
// Resource: certificates.k8s.io/v1 CertificateSigningRequest carrying the label
// open-cluster-management.io/cluster-name. It owns the Approved condition (reason
// AutoApprovedByHubCSRApprovingController) and no finalizer.
//
// Every decision is made by Evaluate, a pure function from the CSR and the facts
// the controller gathered (may the requester renew? is it an auto-approve user?)
// to a Verdict naming the check that failed. Renewals of accepted clusters are
// approved automatically; first CSRs wait for `flotilla accept` unless their
// requester is listed in Options.AutoApproveUsers. Nothing that fails a check is
// ever approved or denied: it is left pending with an event saying why.
package csr
