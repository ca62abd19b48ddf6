package registration

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"flotilla.dev/flotilla/test/testenv"
)

// TestHubTransportIsOneConnectionAndSwapsTheCertificate, on a real hub: the
// agent's clients and the klusterlet's (copies of the config with their own
// limits and timeouts, different API groups) share one TCP connection; a new
// certificate is presented from the next request on (the old connection is
// closed), and setting the same certificate again keeps the connection.
func TestHubTransportIsOneConnectionAndSwapsTheCertificate(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(env.Hub.Config)
	cert1, key1 := issue(ctx, t, admin, "c1", "agent1")
	cert2, key2 := issue(ctx, t, admin, "c1", "agent2")

	var dials atomic.Int32
	ht, err := newHubTransportDialing(env.Hub.URL, env.Hub.CAPEM, func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialHub(ctx, network, addr)
	})
	require.NoError(t, err)
	require.NoError(t, ht.set(cert1, key1))

	agentKube := kubernetes.NewForConfigOrDie(withTimeout(ht.config()))
	workCfg := ht.config()
	workCfg.QPS, workCfg.Burst = 50, 100
	workClusters := clusterclient.NewForConfigOrDie(workCfg)
	whoami := func() string {
		r, err := agentKube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.UserInfo.Username
	}

	assert.Equal(t, Subject("c1", "agent1").CommonName, whoami())
	// The other client: forbidden (no RBAC for this agent), but over the same connection.
	_, err = workClusters.ClusterV1().ManagedClusters().Get(ctx, "c1", metav1.GetOptions{})
	require.Error(t, err)
	for range 5 {
		whoami()
	}
	assert.EqualValues(t, 1, dials.Load(), "every client of the transport on one connection")

	require.NoError(t, ht.set(cert1, key1))
	whoami()
	assert.EqualValues(t, 1, dials.Load(), "the same certificate again keeps the connection")

	require.NoError(t, ht.set(cert2, key2))
	assert.Equal(t, Subject("c1", "agent2").CommonName, whoami(), "a new certificate is presented at once")
	assert.EqualValues(t, 2, dials.Load(), "a new certificate closes the old connection")

	assert.Error(t, ht.set(cert1, key2), "a certificate and a key that do not match are refused")
	assert.Equal(t, Subject("c1", "agent2").CommonName, whoami(), "a refused pair leaves the current one")
}

// issue has the hub sign a client certificate for cluster's agent (approved
// by the admin, signed by kube-controller-manager).
func issue(ctx context.Context, t *testing.T, admin kubernetes.Interface, cluster, agent string) (certPEM, keyPEM []byte) {
	t.Helper()
	keyPEM, err := newKey()
	require.NoError(t, err)
	csr, err := BuildCSR(cluster, agent, keyPEM, 0)
	require.NoError(t, err)
	created, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test"})
	_, err = admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	certPEM, err = waitForCertificate(ctx, admin, admin, created.Name)
	require.NoError(t, err)
	return certPEM, keyPEM
}
