package csr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/internal/ocm"
)

// Check names of addon CSRs, reported in Verdict.Check.
const (
	CheckAddonLabel        = "addon-name-label"
	CheckAddonRequester    = "addon-requester"
	CheckAddonRegistration = "addon-registration"
)

// AddonVerdict is the outcome of EvaluateAddon.
type AddonVerdict struct {
	Verdict
	Addon string
}

// ValidateAddon runs the checks an addon agent's CSR must pass on its own:
// kube-apiserver-client signer, cluster and addon labels, one signed PEM
// request whose subject is exactly OCM's addon agent subject
// (CN system:open-cluster-management:cluster:<c>:addon:<a>:agent:<agent>,
// O the two addon groups), no alternative names, client usages. A zero
// Decision means it passed.
func ValidateAddon(csr *certificatesv1.CertificateSigningRequest) AddonVerdict {
	v := AddonVerdict{}
	cluster, okc := csr.Labels[ocm.ClusterNameLabel]
	addon, oka := csr.Labels[ocm.AddonNameLabel]
	if !okc || !oka {
		v.Decision, v.Message = Ignore, "not an addon CSR (needs labels "+ocm.ClusterNameLabel+" and "+ocm.AddonNameLabel+")"
		return v
	}
	v.Cluster, v.Addon = cluster, addon
	rej := func(check, format string, args ...any) AddonVerdict {
		v.Verdict = reject(v.Verdict, check, format, args...)
		return v
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return rej(CheckSigner, "signer is %q; this hub signs addon credentials with %q only", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientSignerName)
	}
	if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 || ocm.ReservedName(cluster) != "" {
		return rej(CheckLabel, "label %s=%q is not a valid cluster name", ocm.ClusterNameLabel, cluster)
	}
	if errs := validation.IsDNS1123Label(addon); len(errs) > 0 {
		return rej(CheckAddonLabel, "label %s=%q is not a valid addon name", ocm.AddonNameLabel, addon)
	}
	block, rest := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(strings.TrimSpace(string(rest))) > 0 {
		return rej(CheckRequest, "spec.request is not exactly one PEM CERTIFICATE REQUEST block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return rej(CheckRequest, "spec.request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return rej(CheckRequest, "spec.request signature is invalid: %v", err)
	}
	want := []string{ocm.AddonClusterGroup(cluster, addon), ocm.AddonGroupName(addon)}
	if !sameSet(req.Subject.Organization, want) {
		return rej(CheckOrganization, "subject O=%v, want exactly %v", req.Subject.Organization, want)
	}
	prefix := ocm.AddonAgentUser(cluster, addon, "")
	agent, found := strings.CutPrefix(req.Subject.CommonName, prefix)
	if !found || agent == "" || strings.Contains(agent, ":") {
		return rej(CheckCommonName, "subject CN=%q is not %s<agent-name>", req.Subject.CommonName, prefix)
	}
	v.Agent = agent
	if len(req.DNSNames)+len(req.EmailAddresses)+len(req.IPAddresses)+len(req.URIs) > 0 {
		return rej(CheckUsages, "request carries subject alternative names; a client certificate needs none")
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return rej(CheckUsages, "usages %v lack %q", csr.Spec.Usages, certificatesv1.UsageClientAuth)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return rej(CheckUsages, "usage %q is not allowed for an addon client certificate", u)
		}
	}
	v.Renewal = csr.Spec.Username == req.Subject.CommonName
	return v
}

// EvaluateAddon decides an addon CSR. registrations are those the
// ManagedClusterAddOn of the CSR's addon, in the CSR's cluster namespace,
// publishes (nil when it does not exist). It approves only when the requester is
// that cluster's agent (or the addon agent renewing its own certificate) and the
// subject is one the addon declared for that cluster.
func EvaluateAddon(csr *certificatesv1.CertificateSigningRequest, registrations []addonv1alpha1.RegistrationConfig) AddonVerdict {
	if Decided(csr) {
		return AddonVerdict{Verdict: Verdict{Decision: Ignore, Message: "already decided"}}
	}
	v := ValidateAddon(csr)
	if v.Decision != "" {
		return v
	}
	if !v.Renewal && !slices.Contains(csr.Spec.Groups, ocm.ClusterGroupName(v.Cluster)) {
		v.Verdict = reject(v.Verdict, CheckAddonRequester, "requester %q is not an agent of cluster %s (groups %v): only a cluster's own agent files its addons' CSRs", csr.Spec.Username, v.Cluster, csr.Spec.Groups)
		return v
	}
	block, _ := pem.Decode(csr.Spec.Request)
	req, _ := x509.ParseCertificateRequest(block.Bytes)
	for _, r := range registrations {
		if r.SignerName == certificatesv1.KubeAPIServerClientSignerName && r.Subject.User == req.Subject.CommonName && sameSet(r.Subject.Groups, req.Subject.Organization) {
			v.Decision, v.Message = Approve, fmt.Sprintf("addon %s agent %s on cluster %s matches a registration its ManagedClusterAddOn declares", v.Addon, v.Agent, v.Cluster)
			return v
		}
	}
	if registrations == nil {
		v.Verdict = reject(v.Verdict, CheckAddonRegistration, "cluster %s has no ManagedClusterAddOn %s declaring a registration: enable the addon on the cluster first", v.Cluster, v.Addon)
		return v
	}
	v.Verdict = reject(v.Verdict, CheckAddonRegistration, "subject CN=%q O=%v matches no registration of ManagedClusterAddOn %s/%s", req.Subject.CommonName, req.Subject.Organization, v.Cluster, v.Addon)
	return v
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
