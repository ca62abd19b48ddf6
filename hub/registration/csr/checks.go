package csr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"flotilla.dev/flotilla/hub/registration/health"
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
	// Wait: a valid first CSR; an admin must accept it (`flotilla accept`), or,
	// from an auto-approve user, it waits for something the hub or the agent
	// does next (its ManagedCluster to appear, its cluster to be granted).
	Wait Decision = "Wait"
	// Accept: an auto-approve user's first CSR for a cluster nobody decided on:
	// the hub accepts the cluster for this CSR (AutoAcceptedAnnotation) and
	// approves the CSR once it has granted the cluster its RBAC.
	Accept Decision = "Accept"
	// Hold: an auto-approve user's first CSR that auto-approve may not decide
	// (a denied cluster, or an accepted one whose lease is fresh): left pending,
	// never approved nor denied, with an event saying why, for an admin.
	Hold Decision = "Hold"
	// Approve: a valid renewal, or a first CSR from an auto-approve user for a
	// cluster the hub accepted for it or whose lease is stale.
	Approve Decision = "Approve"
)

// AutoAcceptedAnnotation is set on a ManagedCluster by the hub when it accepts
// the cluster for an auto-approve user's first CSR, in the same write as
// spec.hubAcceptsClient=true; its value is that CSR's UID (assigned by the
// apiserver, so nobody can name a CSR before it exists). It tells the hub's
// own acceptance from an admin's: only that CSR is approved on the strength of
// it.
const AutoAcceptedAnnotation = "registration.flotilla.dev/auto-accepted-for-csr"

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
	// RetryAfter, on Wait and Hold, is when the verdict may change by itself
	// (an accepted cluster's lease becomes stale); zero: only a change to the
	// CSR or its ManagedCluster can change it.
	RetryAfter time.Duration
}

// Facts are what the controller learned about the requester from the apiserver.
type Facts struct {
	// RequesterMayRenew: a SubjectAccessReview said the CSR's requester may
	// `renew` managedclusters/clientcertificates for the cluster named in the CSR.
	RequesterMayRenew bool
	// AutoApproveUsers are requesters whose first CSRs are approved without an
	// admin, under the rule of autoApprove.
	AutoApproveUsers []string
	// Cluster is what the hub knows about the CSR's cluster; gathered only for
	// an auto-approve user's first CSR.
	Cluster ClusterFacts
	// Now is the time of the decision.
	Now time.Time
	// ListeningSince is when this hub's approver started: a lease it could
	// not have seen renewed (the hub, its apiserver or the way to it was
	// down, and the hub started again) is not counted stale from before
	// then. Zero: no such bound.
	ListeningSince time.Time
}

// ClusterFacts describe the ManagedCluster a first CSR asks for, read past
// the hub's cache.
type ClusterFacts struct {
	// Found: the ManagedCluster exists.
	Found bool
	// Deleting: it has a deletionTimestamp.
	Deleting bool
	// HubAcceptsClient is its spec.hubAcceptsClient.
	HubAcceptsClient bool
	// HubAccepted is its HubAcceptedManagedCluster condition; nil when absent.
	HubAccepted *metav1.Condition
	// EverGranted: its ClusterRole exists, so the hub accepted it once (a deny
	// keeps the ClusterRole, read-only).
	EverGranted bool
	// AutoAcceptedFor is its AutoAcceptedAnnotation: the UID of the CSR the
	// hub accepted it for; empty when none.
	AutoAcceptedFor string
	// LeaseRenewTime is the renewTime of its Lease managed-cluster-lease; nil
	// when there is no lease or it was never renewed.
	LeaseRenewTime *metav1.MicroTime
	// Grace is how long its lease may go unrenewed before the hub calls it
	// stale (health.Grace: --lease-grace-multiplier x leaseDurationSeconds).
	Grace time.Duration
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
		return autoApprove(csr, v, facts)
	default:
		v.Decision, v.Message = Wait, fmt.Sprintf("first CSR of cluster %s waits for an admin: flotilla accept --clusters %s", v.Cluster, v.Cluster)
	}
	return v
}

// autoApprove decides an auto-approve user's first CSR. It obtains a
// certificate only for a cluster nobody decided on (the hub accepts the
// cluster for it first, then approves it once granted), or for an accepted
// cluster whose lease is stale by the health controller's measure
// (health.LastHeard older than health.Grace: its agent lost its credential and
// comes back without an admin). It never obtains one for a live accepted
// cluster (that would hand its identity to whoever holds the auto-approve
// user's credential) nor for a denied or deleting one: those are held for an
// admin. An accepted cluster without a lease renewal since its (latest)
// acceptance is measured from that acceptance, as the health controller
// measures it (a re-accepted cluster's live agent renews only at its next
// round: until then its lease is as old as the deny); one accepted but not yet
// granted has no clock yet, and its clock starts no earlier than now.
func autoApprove(csr *certificatesv1.CertificateSigningRequest, v Verdict, facts Facts) Verdict {
	c, name, user := facts.Cluster, v.Cluster, csr.Spec.Username
	forThisCSR := c.AutoAcceptedFor != "" && c.AutoAcceptedFor == string(csr.UID)
	granted := c.HubAccepted != nil && c.HubAccepted.Status == metav1.ConditionTrue
	hold := func(after time.Duration, format string, args ...any) Verdict {
		v.Decision, v.RetryAfter = Hold, after
		v.Message = fmt.Sprintf("first CSR of cluster %s from auto-approve user %s is left pending: ", name, user) + fmt.Sprintf(format, args...) +
			fmt.Sprintf("; an admin decides: flotilla accept --clusters %s --force (it lists each pending CSR's requester and key), or kubectl certificate approve|deny %s", name, csr.Name)
		return v
	}
	switch {
	case !c.Found:
		v.Decision, v.Message = Wait, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s waits for ManagedCluster %s to exist (its agent creates it)", name, user, name)
	case c.Deleting:
		return hold(0, "cluster %s is being deleted", name)
	case !c.HubAcceptsClient && (c.HubAccepted != nil || c.EverGranted):
		return hold(0, "the hub admin denied cluster %s (spec.hubAcceptsClient=false) and auto-approve never overrides a deny", name)
	case !c.HubAcceptsClient:
		v.Decision, v.Message = Accept, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s: nobody decided on the cluster, the hub accepts it", name, user)
	case forThisCSR && granted:
		v.Decision, v.Message = Approve, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s (the hub accepted the cluster for it)", name, user)
	case forThisCSR:
		v.Decision, v.Message = Wait, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s waits for the hub to grant the cluster its RBAC (HubAcceptedManagedCluster=True)", name, user)
	case !granted:
		return hold(c.Grace, "cluster %s is accepted by an admin and the hub has not granted it yet (HubAcceptedManagedCluster not True), so its lease cannot be stale before %s", name, c.Grace)
	default:
		heard := health.LastHeard(c.LeaseRenewTime, *c.HubAccepted)
		if heard.Before(facts.ListeningSince) {
			// After an outage of the hub every lease looks old: a silence
			// counts only from when the hub could hear again.
			heard = facts.ListeningSince
		}
		stale, left := health.LeaseStale(heard, facts.Now, c.Grace)
		if !stale {
			return hold(left, "cluster %s is accepted and was last heard from at %s (lease renewal, the acceptance, or the hub's start, whichever is latest), less than its grace of %s ago: "+
				"auto-approve gives no certificate for a live cluster; it will if the lease is still not renewed at %s",
				name, heard.UTC().Format(time.RFC3339), c.Grace, heard.Add(c.Grace).UTC().Format(time.RFC3339))
		}
		v.Decision, v.Message = Approve, fmt.Sprintf("first CSR of cluster %s from auto-approve user %s: the cluster was last heard from at %s, more than its grace of %s ago (its agent lost its credential)",
			name, user, heard.UTC().Format(time.RFC3339), c.Grace)
	}
	return v
}
