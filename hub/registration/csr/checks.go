package csr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"flotilla.dev/flotilla/internal/ocm"
)

// ApprovedReason is the reason on the Approved condition, as upstream OCM writes it.
const ApprovedReason = "AutoApprovedByHubCSRApprovingController"

// DeniedReason is the reason on the Denied condition of a CSR that failed a check;
// the message names the check.
const DeniedReason = "FailedHubCSRCheck"

// Decision is what to do with a CSR.
type Decision string

const (
	// Ignore: not a managed-cluster CSR, or already decided; leave it alone silently.
	Ignore Decision = "Ignore"
	// Reject: it claims to be a managed-cluster CSR but fails a check; never approve.
	Reject Decision = "Reject"
	// Wait: a valid first CSR; an admin must accept it (`flotilla accept`).
	Wait Decision = "Wait"
	// Approve: a valid renewal, or a first CSR from an auto-approve user.
	Approve Decision = "Approve"
)

// Check names, reported in Verdict.Check when a check fails.
const (
	CheckSigner       = "signer"
	CheckLabel        = "cluster-name-label"
	CheckRequest      = "request-pem"
	CheckOrganization = "subject-organization"
	CheckCommonName   = "subject-common-name"
	CheckUsages       = "key-usages"
	CheckRenewal      = "renew-permission"
)

// Verdict is the outcome of Evaluate.
type Verdict struct {
	Decision Decision
	// Cluster and Agent are parsed from the request (empty when the checks failed early).
	Cluster, Agent string
	// Renewal is true when the requester is the certificate's own subject.
	Renewal bool
	// Check names the failed check when Decision is Reject.
	Check string
	// Message explains the verdict to a person.
	Message string
}

// Facts are what the controller learned about the requester from the apiserver.
type Facts struct {
	// RequesterMayRenew: a SubjectAccessReview said the CSR's requester may
	// `renew` managedclusters/clientcertificates for the cluster named in the CSR.
	RequesterMayRenew bool
	// AutoApproveUsers are requesters whose first CSRs are approved without an admin.
	AutoApproveUsers []string
}

var allowedUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
}

func reject(v Verdict, check, format string, args ...any) Verdict {
	v.Decision, v.Check, v.Message = Reject, check, fmt.Sprintf(format, args...)
	return v
}

// Decided reports whether the CSR already carries Approved, Denied or Failed.
func Decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return false
}

// Validate runs the checks that need nothing but the CSR itself: signer, label,
// PEM, subject organisation and common name, usages. A zero Check means it passed.
func Validate(csr *certificatesv1.CertificateSigningRequest) Verdict {
	v := Verdict{}
	cluster, ok := csr.Labels[ocm.ClusterNameLabel]
	if !ok {
		v.Decision, v.Message = Ignore, "no "+ocm.ClusterNameLabel+" label: not a managed-cluster CSR"
		return v
	}
	v.Cluster = cluster
	if addon, ok := csr.Labels[ocm.AddonNameLabel]; ok {
		v.Decision, v.Message = Ignore, "an addon's CSR (label "+ocm.AddonNameLabel+"="+addon+"): the addon manager decides it"
		return v
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return reject(v, CheckSigner, "signer is %q, want %q", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientSignerName)
	}
	if errs := validation.IsDNS1123Label(cluster); cluster == "" || len(errs) > 0 {
		return reject(v, CheckLabel, "label %s=%q is not a valid cluster name", ocm.ClusterNameLabel, cluster)
	}
	if why := ocm.ReservedName(cluster); why != "" {
		return reject(v, CheckLabel, "label %s=%q names a reserved cluster name: %s", ocm.ClusterNameLabel, cluster, why)
	}
	block, rest := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(strings.TrimSpace(string(rest))) > 0 {
		return reject(v, CheckRequest, "spec.request is not exactly one PEM CERTIFICATE REQUEST block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return reject(v, CheckRequest, "spec.request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return reject(v, CheckRequest, "spec.request signature is invalid: %v", err)
	}
	want := ocm.ClusterGroupName(cluster)
	orgs := req.Subject.Organization
	if !slices.Contains(orgs, want) {
		return reject(v, CheckOrganization, "subject O=%v does not contain %q", orgs, want)
	}
	for _, o := range orgs {
		if o != want && o != ocm.ManagedClustersGroup {
			return reject(v, CheckOrganization, "subject O contains %q; only %q and %q are allowed", o, want, ocm.ManagedClustersGroup)
		}
	}
	prefix := ocm.GroupPrefix + cluster + ":"
	cn := req.Subject.CommonName
	agent, found := strings.CutPrefix(cn, prefix)
	if !found || agent == "" || strings.Contains(agent, ":") {
		return reject(v, CheckCommonName, "subject CN=%q is not %s<agent-name>", cn, prefix)
	}
	v.Agent = agent
	if len(req.DNSNames)+len(req.EmailAddresses)+len(req.IPAddresses)+len(req.URIs) > 0 {
		return reject(v, CheckUsages, "request carries subject alternative names; a client certificate needs none")
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return reject(v, CheckUsages, "usages %v lack %q", csr.Spec.Usages, certificatesv1.UsageClientAuth)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return reject(v, CheckUsages, "usage %q is not allowed for a cluster client certificate", u)
		}
	}
	v.Renewal = csr.Spec.Username == cn
	return v
}

// Evaluate decides what to do with csr given facts about its requester.
func Evaluate(csr *certificatesv1.CertificateSigningRequest, facts Facts) Verdict {
	if Decided(csr) {
		return Verdict{Decision: Ignore, Message: "already decided"}
	}
	v := Validate(csr)
	if v.Decision != "" {
		return v
	}
	switch {
	case v.Renewal && facts.RequesterMayRenew:
		v.Decision, v.Message = Approve, fmt.Sprintf("renewal by %s of cluster %s", csr.Spec.Username, v.Cluster)
	case v.Renewal:
		return reject(v, CheckRenewal, "requester %q may not renew managedclusters/clientcertificates for %s (cluster not accepted?)", csr.Spec.Username, v.Cluster)
	case slices.Contains(facts.AutoApproveUsers, csr.Spec.Username):
		v.Decision, v.Message = Approve, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s", v.Cluster, csr.Spec.Username)
	default:
		v.Decision, v.Message = Wait, fmt.Sprintf("first CSR of cluster %s waits for an admin: flotilla accept --clusters %s", v.Cluster, v.Cluster)
	}
	return v
}
