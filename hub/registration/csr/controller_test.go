package csr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// TestWakes: a ManagedCluster event brings back an auto-approve user's CSRs
// only when the cluster may have become what they wait for: created and
// undecided, or just granted; never on a joined cluster's status writes.
func TestWakes(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s}
	}
	mc := func(spec bool, conds ...metav1.Condition) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: spec},
			Status: clusterv1.ManagedClusterStatus{Conditions: conds}}
	}
	accepted := cond(clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionTrue)
	tests := []struct {
		name    string
		cluster *clusterv1.ManagedCluster
		want    bool
	}{
		{"new, nobody decided", mc(false), true},
		{"accepted, not yet granted", mc(true), false},
		{"just granted", mc(true, accepted), true},
		{"granted and joined", mc(true, accepted, cond(clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)), false},
		{"namespace conflict", mc(true, cond(clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionFalse)), false},
		{"denied", mc(false, cond(clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionFalse)), false},
		{"deny not yet applied", mc(false, accepted), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, wakes(tt.cluster))
		})
	}
}

// TestAwaitsGrant: a ManagedCluster event brings back only an auto-approve
// user's undecided CSRs for the hub's signer, never the pile anyone may file
// under a cluster's label (they would be re-checked on every status write).
func TestAwaitsGrant(t *testing.T) {
	users := []string{"auto"}
	mk := func(user, signer string, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			Spec:   certificatesv1.CertificateSigningRequestSpec{Username: user, SignerName: signer},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conds},
		}
	}
	client := certificatesv1.KubeAPIServerClientSignerName
	tests := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		{"auto-approve user, undecided", mk("auto", client), true},
		{"another requester (waits for an admin)", mk("system:open-cluster-management:c1:a1", client), false},
		{"another signer (never decided by the hub)", mk("auto", "example.com/other"), false},
		{"already approved", mk("auto", client, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}), false},
		{"already denied", mk("auto", client, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, awaitsGrant(tt.csr, users))
		})
	}
}
