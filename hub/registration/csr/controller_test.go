package csr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// TestAutoAccept: auto-approval accepts only a cluster nobody decided on, and
// approves only once the hub granted it; a deny, even one the hub has not
// applied yet or whose condition the agent dropped, is never overridden.
func TestAutoAccept(t *testing.T) {
	cond := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: s}}
	}
	mc := func(spec bool, conds []metav1.Condition) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: spec},
			Status: clusterv1.ManagedClusterStatus{Conditions: conds}}
	}
	tests := []struct {
		name                  string
		cluster               *clusterv1.ManagedCluster
		everGranted           bool
		wantAccept, wantGrant bool
	}{
		{"nobody decided: accept, not yet granted", mc(false, nil), false, true, false},
		{"accepted, not yet granted", mc(true, nil), true, true, false},
		{"accepted, namespace conflict (False)", mc(true, cond(metav1.ConditionFalse)), false, true, false},
		{"granted", mc(true, cond(metav1.ConditionTrue)), true, true, true},
		{"denied", mc(false, cond(metav1.ConditionFalse)), true, false, false},
		{"deny not yet applied (HubAccepted still True)", mc(false, cond(metav1.ConditionTrue)), true, false, false},
		{"deny after the agent dropped its condition", mc(false, nil), true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepted, granted := autoAccept(tt.cluster, tt.everGranted)
			assert.Equal(t, tt.wantAccept, accepted, "accepted")
			assert.Equal(t, tt.wantGrant, granted, "granted")
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
