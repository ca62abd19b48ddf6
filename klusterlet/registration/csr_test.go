package registration

import (
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hubcsr "flotilla.dev/flotilla/hub/registration/csr"
)

// The agent's CSR must pass every check the hub makes, as a first CSR and as a renewal.
func TestBuildCSRPassesHubChecks(t *testing.T) {
	key, err := newKey()
	require.NoError(t, err)
	csr, err := BuildCSR("cluster1", "agent1", key, 3600)
	require.NoError(t, err)
	assert.Equal(t, "cluster1-", csr.GenerateName)
	assert.Equal(t, int32(3600), *csr.Spec.ExpirationSeconds)

	csr.Spec.Username = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
	v := hubcsr.Evaluate(csr, hubcsr.Facts{})
	assert.Equal(t, hubcsr.Wait, v.Decision, v.Message)
	assert.Equal(t, "agent1", v.Agent)

	csr.Spec.Username = "system:open-cluster-management:cluster1:agent1"
	v = hubcsr.Evaluate(csr, hubcsr.Facts{RequesterMayRenew: true})
	assert.Equal(t, hubcsr.Approve, v.Decision, v.Message)
	assert.True(t, v.Renewal)

	assert.True(t, requestMatchesKey(csr, key, Subject("cluster1", "agent1")), "a restarted agent recognises its CSR")
	other, err := newKey()
	require.NoError(t, err)
	assert.False(t, requestMatchesKey(csr, other, Subject("cluster1", "agent1")), "not with another key")
	assert.False(t, requestMatchesKey(csr, key, Subject("cluster1", "agent2")), "not for another agent")
	assert.False(t, requestMatchesKey(&certificatesv1.CertificateSigningRequest{}, key, Subject("cluster1", "agent1")))
}

func TestRotationDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: start, NotAfter: start.Add(100 * time.Hour)}
	tests := []struct {
		fraction float64
		want     time.Time
	}{
		{0.2, start.Add(80 * time.Hour)},
		{0.25, start.Add(75 * time.Hour)},
		{0.99, start.Add(time.Hour)},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, RotationDue(cert, tt.fraction), "fraction %v", tt.fraction)
	}
}

func TestGoneCount(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "managedclusters"}, "c1", errors.New("no"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "managedclusters"}, "c1")
	fails := errors.New("status update failed")
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		before    goneCount
		statusErr error
		getOwn    error
		want      goneCount
	}{
		{"status fine", goneCount{2, t0}, nil, forbidden, goneCount{}},
		{"own cluster unreadable", goneCount{1, t0}, fails, forbidden, goneCount{2, t0}},
		{"own cluster deleted: the first round starts the clock", goneCount{}, fails, notFound, goneCount{1, t0.Add(time.Minute)}},
		{"denied: can still read its cluster", goneCount{2, t0}, fails, nil, goneCount{}},
		{"hub unreachable", goneCount{2, t0}, fails, errors.New("connection refused"), goneCount{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.before.next(t0.Add(time.Minute), tt.statusErr, func() error { return tt.getOwn }))
		})
	}

	for _, tt := range []struct {
		name string
		g    goneCount
		now  time.Time
		want bool
	}{
		{"three rounds over goneFor", goneCount{3, t0}, t0.Add(goneFor), true},
		{"three quick rounds (a restarting hub's 403s)", goneCount{3, t0}, t0.Add(goneFor - time.Second), false},
		{"long but two rounds", goneCount{2, t0}, t0.Add(time.Hour), false},
		{"none", goneCount{}, t0.Add(time.Hour), false},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.g.gone(tt.now)) })
	}
}

// TestOwnCSR: only CSRs for the agent's own subject, by its own requester, count
// toward its cap of pending CSRs.
func TestOwnCSR(t *testing.T) {
	key, err := newKey()
	require.NoError(t, err)
	mk := func(cluster, agent, user string) *certificatesv1.CertificateSigningRequest {
		csr, err := BuildCSR(cluster, agent, key, 0)
		require.NoError(t, err)
		csr.Spec.Username = user
		return csr
	}
	me := Subject("cluster2", "a2")
	const boot = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
	tests := []struct {
		name      string
		csr       *certificatesv1.CertificateSigningRequest
		requester string
		want      bool
	}{
		{"its own", mk("cluster2", "a2", boot), boot, true},
		{"its own, requester unknown", mk("cluster2", "a2", boot), "", true},
		{"another agent's name", mk("cluster2", "junk", boot), boot, false},
		{"another cluster's agent under its label", mk("cluster1", "a1", "system:open-cluster-management:cluster1:a1"), boot, false},
		{"its subject, another requester", mk("cluster2", "a2", "system:open-cluster-management:cluster1:a1"), boot, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, ownCSR(tt.csr, me, tt.requester)) })
	}
}
