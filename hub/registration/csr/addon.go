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
// kube-apiserver-client signer (or a custom signer, whose subject only
// EvaluateAddon can check against the declared registrations), cluster and addon labels, one signed PEM
// request whose subject is exactly OCM's addon agent subject
// (CN system:open-cluster-management:cluster:<c>:addon:<a>:agent:<agent>,
// O the two addon groups), no alternative names (but the one DNS name OCM's
// agents put in every addon CSR, AddonDNSName), client usages. A zero
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
	custom := csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName
	if custom && !IsCustomSigner(csr.Spec.SignerName) {
		return rej(CheckSigner, "signer is %q; addon credentials are signed by %q or by a custom signer <domain>/<path> outside kubernetes.io", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientSignerName)
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
	if len(req.EmailAddresses)+len(req.IPAddresses)+len(req.URIs) > 0 || !upstreamAddonDNSNames(req.DNSNames, addon) {
		return rej(CheckUsages, "request carries subject alternative names %v; a client certificate needs none (OCM's agents may name %s only)", sans(req), AddonDNSName(addon))
	}
	if err := checkUsages(csr.Spec.Usages); err != nil {
		return rej(CheckUsages, "%v", err)
	}
	if custom {
		// A custom signer's subject is the addon's to declare: EvaluateAddon
		// matches it against the registrations. Such a certificate is no hub
		// identity, so it is never a renewal by its holder.
		v.Agent = req.Subject.CommonName
		return v
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
	return RecheckAddon(csr, registrations)
}

// RecheckAddon is EvaluateAddon on a CSR whatever its conditions say: a signer
// runs it again on an approved CSR before signing, so an approval given by
// someone else than the addon approver signs nothing the checks refuse.
func RecheckAddon(csr *certificatesv1.CertificateSigningRequest, registrations []addonv1alpha1.RegistrationConfig) AddonVerdict {
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
		signer := r.SignerName
		if signer == "" {
			signer = certificatesv1.KubeAPIServerClientSignerName
		}
		if signer == csr.Spec.SignerName && r.Subject.User == req.Subject.CommonName && sameSet(r.Subject.Groups, req.Subject.Organization) &&
			sameSet(r.Subject.OrganizationUnits, req.Subject.OrganizationalUnit) {
			v.Decision, v.Message = Approve, fmt.Sprintf("addon %s agent %s on cluster %s matches a registration its ManagedClusterAddOn declares", v.Addon, v.Agent, v.Cluster)
			return v
		}
	}
	if registrations == nil {
		v.Verdict = reject(v.Verdict, CheckAddonRegistration, "cluster %s has no ManagedClusterAddOn %s declaring a registration: enable the addon on the cluster first", v.Cluster, v.Addon)
		return v
	}
	v.Verdict = reject(v.Verdict, CheckAddonRegistration, "signer %s with subject CN=%q O=%v OU=%v matches no registration of ManagedClusterAddOn %s/%s",
		csr.Spec.SignerName, req.Subject.CommonName, req.Subject.Organization, req.Subject.OrganizationalUnit, v.Cluster, v.Addon)
	return v
}

// IsCustomSigner reports whether name is a signer an addon may declare for a
// CustomSigner registration: <domain>/<path>, the domain outside kubernetes.io.
func IsCustomSigner(name string) bool {
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" || strings.ContainsAny(path, " \t\n") || len(validation.IsDNS1123Subdomain(domain)) > 0 {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

func checkUsages(usages []certificatesv1.KeyUsage) error {
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) {
		return fmt.Errorf("usages %v lack %q", usages, certificatesv1.UsageClientAuth)
	}
	for _, u := range usages {
		if !slices.Contains(allowedUsages, u) {
			return fmt.Errorf("usage %q is not allowed for an addon client certificate", u)
		}
	}
	return nil
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

// AddonDNSName is the DNS name upstream OCM's registration agent puts in every
// addon CSR it files (<addon>.addon.open-cluster-management.io). It is the only
// alternative name an addon CSR may carry: kube-apiserver ignores it for client
// authentication.
func AddonDNSName(addon string) string { return addon + ".addon.open-cluster-management.io" }

// upstreamAddonDNSNames says whether names is empty or exactly AddonDNSName(addon).
func upstreamAddonDNSNames(names []string, addon string) bool {
	return len(names) == 0 || (len(names) == 1 && names[0] == AddonDNSName(addon))
}

// sans lists a request's alternative names for a message.
func sans(req *x509.CertificateRequest) []string {
	out := append([]string{}, req.DNSNames...)
	out = append(out, req.EmailAddresses...)
	for _, ip := range req.IPAddresses {
		out = append(out, ip.String())
	}
	for _, u := range req.URIs {
		out = append(out, u.String())
	}
	return out
}
