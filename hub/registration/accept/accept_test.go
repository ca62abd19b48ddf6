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

func TestDecidePending(t *testing.T) {
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
		approve       list
		report, err   string // substrings; "" = none
	}{
		{name: "nothing pending"},
		{name: "one CSR, new cluster", pending: list{real}, approve: list{real}},
		{name: "impostor with the same agent name", pending: list{real, sameNameOtherKey}, err: "2 distinct keys"},
		{name: "force does not pick between two", pending: list{real, sameNameOtherKey}, force: true, err: "refusing to guess"},
		{name: "two CSRs with one key", pending: list{real, sameKeyAgain}, err: "1 distinct keys"},
		{name: "joined cluster: a CSR under its name is reported, not approved", pending: list{real}, joined: true, report: "no CSR was approved"},
		{name: "re-accept of a denied cluster with a forged CSR pending", pending: list{sameNameOtherKey}, joined: true, report: "--force"},
		{name: "joined cluster with two forged CSRs: still only reported", pending: list{real, sameNameOtherKey}, joined: true, report: "2 pending"},
		{name: "joined cluster asks again, admin forces", pending: list{real}, joined: true, force: true, approve: list{real}},
		{name: "joined cluster, nothing pending", joined: true},
	}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			approve, report, err := decidePending(cluster, tt.pending, tt.joined, tt.force)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				for _, r := range tt.pending {
					assert.Contains(t, err.Error(), r.Name, "each CSR is listed")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.approve, approve)
			if tt.report == "" {
				assert.Empty(t, report)
				return
			}
			assert.Contains(t, report, tt.report)
			for _, r := range tt.pending {
				assert.Contains(t, report, r.Name, "each CSR is listed")
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

// TestRewatchPause: a watch the apiserver keeps closing at once is opened
// again after a pause that doubles up to a bound; one that lasted is opened
// again at once.
func TestRewatchPause(t *testing.T) {
	for _, tc := range []struct {
		name         string
		last, lasted time.Duration
		want         time.Duration
	}{
		{"first quick end", 0, 10 * time.Millisecond, minRewatchPause},
		{"quick ends double", 400 * time.Millisecond, 0, 800 * time.Millisecond},
		{"bounded", 4 * time.Second, time.Second, maxRewatchPause},
		{"stays at the bound", maxRewatchPause, 0, maxRewatchPause},
		{"a watch that lasted resets", maxRewatchPause, longWatch, 0},
		{"the apiserver's timeout", 0, 8 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rewatchPause(tc.last, tc.lasted))
		})
	}
}
