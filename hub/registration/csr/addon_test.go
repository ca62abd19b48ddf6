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

func TestEvaluateAddon(t *testing.T) {
	reg := registration("c1", "example")
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
		{"bad addon label", addonCSR(t, "c1", "Bad_Name").Obj(), reg, Reject, CheckAddonLabel},
		{"another signer", addonCSR(t, "c1", "example").signer("example.com/custom").Obj(), reg, Reject, CheckSigner},
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
