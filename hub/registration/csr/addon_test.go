package csr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	certificatesv1 "k8s.io/api/certificates/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// addonCSR is a CSR the klusterlet of cluster files for addon's agent.
func addonCSR(t *testing.T, cluster, addon string) *csrBuilder {
	b := newCSR(t, cluster, "x")
	b.obj.Labels["open-cluster-management.io/addon-name"] = addon
	b.obj.Spec.Username = "system:open-cluster-management:" + cluster + ":agent1"
	b.obj.Spec.Groups = []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters", "system:authenticated"}
	b.sub.CommonName = "system:open-cluster-management:cluster:" + cluster + ":addon:" + addon + ":agent:" + addon + "-agent"
	b.sub.Organization = []string{"system:open-cluster-management:cluster:" + cluster + ":addon:" + addon, "system:open-cluster-management:addon:" + addon}
	return b
}

func registration(cluster, addon string) []addonv1alpha1.RegistrationConfig {
	return []addonv1alpha1.RegistrationConfig{{SignerName: certificatesv1.KubeAPIServerClientSignerName, Subject: addonv1alpha1.Subject{
		User:   "system:open-cluster-management:cluster:" + cluster + ":addon:" + addon + ":agent:" + addon + "-agent",
		Groups: []string{"system:open-cluster-management:cluster:" + cluster + ":addon:" + addon, "system:open-cluster-management:addon:" + addon}}}}
}

// customCSR is a CSR for a CustomSigner registration (signer example.com/custom, CN example-client, O a and b).
func customCSR(t *testing.T, cluster, addon string) *csrBuilder {
	b := addonCSR(t, cluster, addon).signer("example.com/custom").cn("example-client").org("a", "b")
	return b
}

func TestIsCustomSigner(t *testing.T) {
	for name, want := range map[string]bool{
		"example.com/custom": true, "flotilla.dev/a/b": true,
		"kubernetes.io/kube-apiserver-client": false, "kubernetes.io/legacy-unknown": false, "foo.kubernetes.io/x": false,
		"custom": false, "example.com/": false, "Example.com/x": false, "/x": false,
	} {
		assert.Equal(t, want, IsCustomSigner(name), name)
	}
}

func TestEvaluateAddon(t *testing.T) {
	reg := registration("c1", "example")
	custom := []addonv1alpha1.RegistrationConfig{{SignerName: "example.com/custom", Subject: addonv1alpha1.Subject{User: "example-client", Groups: []string{"a", "b"}}}}
	for _, tc := range []struct {
		name  string
		csr   *certificatesv1.CertificateSigningRequest
		regs  []addonv1alpha1.RegistrationConfig
		want  Decision
		check string
	}{
		{"declared subject from the cluster's agent", addonCSR(t, "c1", "example").Obj(), reg, Approve, ""},
		{"groups in another order", addonCSR(t, "c1", "example").org("system:open-cluster-management:addon:example", "system:open-cluster-management:cluster:c1:addon:example").Obj(), reg, Approve, ""},
		{"no ManagedClusterAddOn", addonCSR(t, "c1", "example").Obj(), nil, Reject, CheckAddonRegistration},
		{"addon declares no registration", addonCSR(t, "c1", "example").Obj(), []addonv1alpha1.RegistrationConfig{}, Reject, CheckAddonRegistration},
		{"another addon's registration", addonCSR(t, "c1", "example").Obj(), registration("c1", "other"), Reject, CheckAddonRegistration},
		{"filed by another cluster's agent", func() *certificatesv1.CertificateSigningRequest {
			b := addonCSR(t, "c1", "example")
			b.obj.Spec.Username = "system:open-cluster-management:c2:agent1"
			b.obj.Spec.Groups = []string{"system:open-cluster-management:c2", "system:open-cluster-management:managed-clusters"}
			return b.Obj()
		}(), reg, Reject, CheckAddonRequester},
		{"subject names another cluster", addonCSR(t, "c1", "example").cn("system:open-cluster-management:cluster:c2:addon:example:agent:example-agent").Obj(), reg, Reject, CheckCommonName},
		{"subject names another addon", addonCSR(t, "c1", "example").cn("system:open-cluster-management:cluster:c1:addon:other:agent:example-agent").Obj(), reg, Reject, CheckCommonName},
		{"extra group", addonCSR(t, "c1", "example").org("system:open-cluster-management:cluster:c1:addon:example", "system:open-cluster-management:addon:example", "system:masters").Obj(), reg, Reject, CheckOrganization},
		{"cluster agent's groups", addonCSR(t, "c1", "example").org("system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters").Obj(), reg, Reject, CheckOrganization},
		{"server usage", addonCSR(t, "c1", "example").usages(certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth).Obj(), reg, Reject, CheckUsages},
		{"SANs", addonCSR(t, "c1", "example").dnsNames("evil.example.com").Obj(), reg, Reject, CheckUsages},
		{"upstream agent's DNS name", addonCSR(t, "c1", "example").dnsNames("example.addon.open-cluster-management.io").Obj(), reg, Approve, ""},
		{"another addon's upstream DNS name", addonCSR(t, "c1", "example").dnsNames("other.addon.open-cluster-management.io").Obj(), reg, Reject, CheckUsages},
		{"upstream DNS name and another", addonCSR(t, "c1", "example").dnsNames("example.addon.open-cluster-management.io", "evil.example.com").Obj(), reg, Reject, CheckUsages},
		{"bad addon label", addonCSR(t, "c1", "Bad_Name").Obj(), reg, Reject, CheckAddonLabel},
		{"a custom signer the addon did not declare", addonCSR(t, "c1", "example").signer("example.com/custom").Obj(), reg, Reject, CheckAddonRegistration},
		{"a kubernetes.io signer", addonCSR(t, "c1", "example").signer("kubernetes.io/legacy-unknown").Obj(), reg, Reject, CheckSigner},
		{"no signer domain", addonCSR(t, "c1", "example").signer("custom").Obj(), reg, Reject, CheckSigner},
		// CustomSigner registrations: signer and subject are the addon's to declare.
		{"custom: declared signer and subject", customCSR(t, "c1", "example").Obj(), custom, Approve, ""},
		{"custom: groups in another order", customCSR(t, "c1", "example").org("b", "a").Obj(), custom, Approve, ""},
		{"custom: another signer", customCSR(t, "c1", "example").signer("example.com/other").Obj(), custom, Reject, CheckAddonRegistration},
		{"custom: another CN", customCSR(t, "c1", "example").cn("someone-else").Obj(), custom, Reject, CheckAddonRegistration},
		{"custom: extra group", customCSR(t, "c1", "example").org("a", "b", "system:masters").Obj(), custom, Reject, CheckAddonRegistration},
		{"custom: the subject under the kube client signer", customCSR(t, "c1", "example").signer(certificatesv1.KubeAPIServerClientSignerName).Obj(), custom, Reject, CheckOrganization},
		{"custom: another addon's registration", customCSR(t, "c1", "other").Obj(), nil, Reject, CheckAddonRegistration},
		{"custom: names another cluster", func() *certificatesv1.CertificateSigningRequest {
			b := customCSR(t, "c2", "example")
			b.obj.Spec.Username = "system:open-cluster-management:c1:agent1"
			b.obj.Spec.Groups = []string{"system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters"}
			return b.Obj()
		}(), custom, Reject, CheckAddonRequester},
		{"custom: filed by its holder is no renewal", func() *certificatesv1.CertificateSigningRequest {
			b := customCSR(t, "c1", "example")
			b.obj.Spec.Username, b.obj.Spec.Groups = "example-client", []string{"a", "b"}
			return b.Obj()
		}(), custom, Reject, CheckAddonRequester},
		{"custom: server usage", customCSR(t, "c1", "example").usages(certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth).Obj(), custom, Reject, CheckUsages},
		{"custom: SANs", customCSR(t, "c1", "example").dnsNames("evil.example.com").Obj(), custom, Reject, CheckUsages},
		{"already decided", addonCSR(t, "c1", "example").condition(certificatesv1.CertificateDenied).Obj(), reg, Ignore, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := EvaluateAddon(tc.csr, tc.regs)
			assert.Equal(t, tc.want, v.Decision, v.Message)
			assert.Equal(t, tc.check, v.Check, v.Message)
			if tc.want != Ignore {
				assert.NotEmpty(t, v.Message)
			}
		})
	}
}

func TestClusterChecksLeaveAddonCSRsAlone(t *testing.T) {
	v := Evaluate(addonCSR(t, "c1", "example").Obj(), Facts{})
	assert.Equal(t, Ignore, v.Decision, v.Message)
}
