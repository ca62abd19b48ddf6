package accept

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/klusterlet/registration"
)

func keyPEM(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func TestCheckPending(t *testing.T) {
	key := keyPEM(t)
	mk := func(name, agent string, key []byte) *certificatesv1.CertificateSigningRequest {
		r, err := registration.BuildCSR("c1", agent, key, 0)
		require.NoError(t, err)
		r.Name, r.Spec.Username = name, "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
		return r
	}
	real := mk("real", "a1", key)
	sameNameOtherKey := mk("impostor", "a1", keyPEM(t))
	sameKeyAgain := mk("again", "a1", key)
	type list = []*certificatesv1.CertificateSigningRequest
	tests := []struct {
		name          string
		pending       list
		joined, force bool
		want          string // "" = approve
	}{
		{"nothing pending", nil, false, false, ""},
		{"one CSR, new cluster", list{real}, false, false, ""},
		{"impostor with the same agent name", list{real, sameNameOtherKey}, false, false, "2 distinct keys"},
		{"force does not pick between two", list{real, sameNameOtherKey}, false, true, "refusing to guess"},
		{"two CSRs with one key", list{real, sameKeyAgain}, false, false, "1 distinct keys"},
		{"joined cluster asks again", list{real}, true, false, "--force"},
		{"joined cluster asks again, admin forces", list{real}, true, true, ""},
		{"joined cluster, nothing pending", nil, true, false, ""},
	}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPending(cluster, tt.pending, tt.joined, tt.force)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			for _, r := range tt.pending {
				assert.Contains(t, err.Error(), r.Name, "each CSR is listed")
			}
		})
	}
}

func TestJoinedBefore(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", CreationTimestamp: created}}
	approvedAt := func(at time.Time) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateApproved, LastUpdateTime: metav1.NewTime(at)}}}}
	}
	assert.False(t, joinedBefore(cluster, nil), "new cluster")
	assert.False(t, joinedBefore(cluster, []*certificatesv1.CertificateSigningRequest{approvedAt(created.Add(-time.Minute))}),
		"a CSR approved for an earlier cluster of the same name does not count")
	assert.True(t, joinedBefore(cluster, []*certificatesv1.CertificateSigningRequest{approvedAt(created.Add(time.Minute))}))
	withJoined := cluster.DeepCopy()
	withJoined.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionFalse}}
	assert.True(t, joinedBefore(withJoined, nil))
}
