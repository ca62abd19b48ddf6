package registration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// saIssuer is the hub apiserver's --service-account-issuer; with no
// --api-audiences it is also the only audience the apiserver accepts.
const saIssuer = "https://kubernetes.default.svc.cluster.local"

// mintBootstrapToken signs, with the hub's own service-account key, a token for
// the bootstrap ServiceAccount shaped like a TokenRequest token, valid from
// notBefore to expires.
func mintBootstrapToken(t *testing.T, notBefore, expires time.Time) string {
	t.Helper()
	sa, err := kube(env.Hub.Config).CoreV1().ServiceAccounts(ocm.BootstrapNamespace).Get(context.Background(), ocm.BootstrapServiceAccount, metav1.GetOptions{})
	require.NoError(t, err)
	keyPEM, err := os.ReadFile(filepath.Join(env.Hub.Dir, "pki", "sa.key"))
	require.NoError(t, err)
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	require.NoError(t, err)
	key, ok := parsed.(*ecdsa.PrivateKey)
	require.True(t, ok, "the hub's sa.key is ECDSA (got %T)", parsed)

	claims := map[string]any{
		"iss": saIssuer,
		"aud": []string{saIssuer},
		"sub": "system:serviceaccount:" + ocm.BootstrapNamespace + ":" + ocm.BootstrapServiceAccount,
		"iat": notBefore.Unix(),
		"nbf": notBefore.Unix(),
		"exp": expires.Unix(),
		"jti": string(sa.UID) + "-test",
		"kubernetes.io": map[string]any{
			"namespace":      ocm.BootstrapNamespace,
			"serviceaccount": map[string]any{"name": sa.Name, "uid": string(sa.UID)},
		},
	}
	return signES256(t, key, claims)
}

// signES256 is a compact JWS (RFC 7515) over claims with ES256 (RFC 7518 3.4).
func signES256(t *testing.T, key *ecdsa.PrivateKey, claims any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	header, err := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT"})
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	require.NoError(t, err)
	sig := make([]byte, 64) // r || s, each left-padded to 32 bytes
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + enc.EncodeToString(sig)
}

// TestJoinRefusesExpiredToken: a bootstrap token signed by the hub but expired
// is refused with the "expired or wrong" error and nothing is written. The same
// token with a future expiry is accepted by the hub, so the refusal is the expiry.
func TestJoinRefusesExpiredToken(t *testing.T) {
	ctx := context.Background()
	now := time.Now()

	fresh := mintBootstrapToken(t, now.Add(-time.Minute), now.Add(10*time.Minute))
	review, err := kube(&rest.Config{Host: env.Hub.URL, BearerToken: fresh, TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.CAPEM}}).
		AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "a fresh token signed the same way is valid")
	assert.Equal(t, "system:serviceaccount:"+ocm.BootstrapNamespace+":"+ocm.BootstrapServiceAccount, review.Status.UserInfo.Username)

	expired := mintBootstrapToken(t, now.Add(-2*time.Hour), now.Add(-time.Hour))
	err = join.Join(ctx, join.Options{SpokeConfig: env.Clusters[1].Config, HubAPIServer: env.Hub.URL, HubToken: expired,
		ClusterName: "c-expired", AgentNamespace: "agent-expired"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the hub rejected the bootstrap token (expired or wrong)")
	assert.Contains(t, err.Error(), "flotilla get token")
	_, err = kube(env.Clusters[1].Config).CoreV1().Namespaces().Get(ctx, "agent-expired", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written on the managed cluster: %v", err)
	assert.Nil(t, hubCluster(t, "c-expired"), "nothing created on the hub")
}

// klusterletRBAC are the cluster-scoped objects join writes from manifests/klusterlet.
var klusterletRBAC = []string{"open-cluster-management:klusterlet-registration", "open-cluster-management:klusterlet-work"}

// joinAccepted joins name from cluster1 with the full klusterlet (Deployment,
// ServiceAccount, RBAC), runs its agent in-process until accepted and Joined,
// then stops the agent (as deleting the Deployment would).
func joinAccepted(t *testing.T, name, ns string) {
	t.Helper()
	spoke := env.Clusters[0]
	require.NoError(t, join.Join(context.Background(), join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: name, AgentNamespace: ns, CAFile: writeFile(t, env.Hub.CAPEM)}))
	a := newAgent(t, spoke, name, ns).start()
	acceptClusters(t, name)
	waitCondition(t, name, clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	a.stop()

	ctx := context.Background()
	cs := kube(spoke.Config)
	_, err := cs.AppsV1().Deployments(ns).Get(ctx, "klusterlet", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ServiceAccounts(ns).Get(ctx, "klusterlet", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Secrets(ns).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	require.NoError(t, err)
	for _, n := range klusterletRBAC {
		_, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
	}
	hub := kube(env.Hub.Config)
	_, err = hub.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "hub namespace of %s", name)
	_, err = hub.RbacV1().ClusterRoles().Get(ctx, ocm.ClusterRoleName(name), metav1.GetOptions{})
	require.NoError(t, err, "hub ClusterRole of %s", name)
}

// requireSpokeClean waits until everything join wrote into cluster1 is gone.
func requireSpokeClean(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	cs := kube(env.Clusters[0].Config)
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick, "agent namespace %s (with its secrets, ServiceAccount, Role and Deployment) gone", ns)
	for _, n := range klusterletRBAC {
		_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, n, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "ClusterRoleBinding %s gone: %v", n, err)
	}
	_, err := cs.RbacV1().ClusterRoles().Get(ctx, klusterletRBAC[0], metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRole %s gone: %v", klusterletRBAC[0], err)
}

// TestUnjoin: unjoin removes the klusterlet from the managed cluster; only with
// --cleanup-hub (HubConfig) does it also remove the cluster from the hub.
func TestUnjoin(t *testing.T) {
	ctx := context.Background()
	hub := kube(env.Hub.Config)

	t.Run("without cleanup-hub the hub keeps the cluster", func(t *testing.T) {
		joinAccepted(t, "kept", "agent-kept")
		t.Cleanup(func() {
			_ = clusters(env.Hub.Config).ClusterV1().ManagedClusters().Delete(ctx, "kept", metav1.DeleteOptions{})
		})
		require.NoError(t, join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: env.Clusters[0].Config, ClusterName: "kept", AgentNamespace: "agent-kept"}))
		requireSpokeClean(t, "agent-kept")

		mc := hubCluster(t, "kept")
		require.NotNil(t, mc, "ManagedCluster kept")
		assert.True(t, mc.Spec.HubAcceptsClient)
		assert.Nil(t, mc.DeletionTimestamp)
		_, err := hub.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{})
		assert.NoError(t, err, "hub namespace kept")
		_, err = hub.RbacV1().ClusterRoles().Get(ctx, ocm.ClusterRoleName("kept"), metav1.GetOptions{})
		assert.NoError(t, err, "hub ClusterRole kept")
	})

	t.Run("cleanup-hub removes the cluster from the hub", func(t *testing.T) {
		joinAccepted(t, "unjoined", "agent-unjoined")
		var progress strings.Builder
		require.NoError(t, join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: env.Clusters[0].Config, ClusterName: "unjoined",
			AgentNamespace: "agent-unjoined", HubConfig: env.Hub.Config, Progress: &progress}))
		assert.Contains(t, progress.String(), "deleting ManagedCluster unjoined on the hub")
		requireSpokeClean(t, "agent-unjoined")

		require.Eventually(t, func() bool { return hubCluster(t, "unjoined") == nil }, timeout, tick, "ManagedCluster gone")
		require.Eventually(t, func() bool {
			_, err := hub.CoreV1().Namespaces().Get(ctx, "unjoined", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, timeout, tick, "hub namespace gone (with its leases and RoleBindings)")
		_, err := hub.RbacV1().ClusterRoles().Get(ctx, ocm.ClusterRoleName("unjoined"), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "hub ClusterRole gone: %v", err)
		_, err = hub.RbacV1().ClusterRoleBindings().Get(ctx, ocm.ClusterRoleName("unjoined"), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "hub ClusterRoleBinding gone: %v", err)
	})

	t.Run("cleanup-hub without a cluster name removes nothing", func(t *testing.T) {
		spoke := kube(env.Clusters[0].Config)
		_, err := spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-nameless"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = spoke.CoreV1().Namespaces().Delete(ctx, "agent-nameless", metav1.DeleteOptions{}) })

		err = join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: env.Clusters[0].Config, AgentNamespace: "agent-nameless", HubConfig: env.Hub.Config})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--cleanup-hub needs --cluster-name")
		ns, err := spoke.CoreV1().Namespaces().Get(ctx, "agent-nameless", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Nil(t, ns.DeletionTimestamp, "the agent namespace was left alone")
	})
}

// syncBuffer is a progress writer read while join still writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJoinWait: join --wait returns once the agent holds its hub certificate
// (hub-kubeconfig-secret with tls.crt), which needs the admin's accept; without
// an accept it gives up after --timeout with a clear error.
func TestJoinWait(t *testing.T) {
	ctx := context.Background()
	spoke := env.Clusters[1]
	cs := kube(spoke.Config)

	t.Run("returns once accepted", func(t *testing.T) {
		progress := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
				ClusterName: "waited", AgentNamespace: "agent-waited", NoDeployment: true, Wait: true, Timeout: timeout, Progress: progress})
		}()
		t.Cleanup(func() {
			_ = join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: spoke.Config, AgentNamespace: "agent-waited"})
		})
		require.Eventually(t, func() bool {
			return strings.Contains(progress.String(), "waiting for the hub to accept cluster waited")
		},
			timeout, tick, "join wrote the bootstrap secret and waits")
		_, err := cs.CoreV1().Secrets("agent-waited").Get(ctx, registration.BootstrapKubeconfigSecret, metav1.GetOptions{})
		require.NoError(t, err)
		select {
		case err := <-done:
			t.Fatalf("join --wait returned before the cluster was accepted: %v", err)
		default:
		}

		newAgent(t, spoke, "waited", "agent-waited").start()
		acceptClusters(t, "waited")
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(timeout):
			t.Fatal("join --wait did not return after the cluster was accepted")
		}
		assert.Contains(t, progress.String(), "cluster waited joined the hub")
		sec, err := cs.CoreV1().Secrets("agent-waited").Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, sec.Data[registration.KeyCert], "the agent holds its certificate when join --wait returns")
	})

	t.Run("times out without accept", func(t *testing.T) {
		t.Cleanup(func() {
			_ = join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: spoke.Config, AgentNamespace: "agent-never"})
		})
		err := join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
			ClusterName: "never-accepted", AgentNamespace: "agent-never", NoDeployment: true, Wait: true, Timeout: 2 * time.Second})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster never-accepted was not accepted within 2s")
		assert.Contains(t, err.Error(), "flotilla accept")
	})
}

// TestInitWait: init --wait (bootstrap.WaitForHub) returns once a hub has
// registered its webhooks, keeps waiting while only init's placeholder is
// there, and gives up after --timeout with a clear error when no hub serves.
func TestInitWait(t *testing.T) {
	ctx := context.Background()

	t.Run("hub serving", func(t *testing.T) {
		var progress strings.Builder
		require.NoError(t, bootstrap.WaitForHub(ctx, env.Hub.Config, timeout, &progress))
		assert.Contains(t, progress.String(), "the Flotilla hub is serving")
	})

	t.Run("no hub", func(t *testing.T) {
		err := bootstrap.WaitForHub(ctx, env.Clusters[0].Config, 2*time.Second, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no Flotilla hub registered its webhooks on "+env.Clusters[0].URL+" within 2s")
	})

	t.Run("bad timeout", func(t *testing.T) {
		err := bootstrap.WaitForHub(ctx, env.Hub.Config, 0, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "must be positive")
	})

	// cluster2's apiserver stands in for a hub after `init` and before `flotilla
	// hub`: it holds init's placeholder (it has no ManagedClusters, so the
	// fail-closed placeholder changes nothing there). A hub then registers its
	// webhooks: the configuration the shared hub registered on its apiserver.
	t.Run("placeholder until a hub registers", func(t *testing.T) {
		vwcs := kube(env.Clusters[1].Config).AdmissionregistrationV1().ValidatingWebhookConfigurations()
		_, err := vwcs.Create(ctx, webhook.Placeholder(), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = vwcs.Delete(ctx, webhook.ConfigurationName, metav1.DeleteOptions{}) })

		err = bootstrap.WaitForHub(ctx, env.Clusters[1].Config, 2*time.Second, nil)
		require.Error(t, err, "the placeholder is not a serving hub")
		assert.Contains(t, err.Error(), "no Flotilla hub registered its webhooks")

		done := make(chan error, 1)
		go func() { done <- bootstrap.WaitForHub(ctx, env.Clusters[1].Config, timeout, nil) }()
		served, err := kube(env.Hub.Config).AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.ConfigurationName, metav1.GetOptions{})
		require.NoError(t, err)
		require.False(t, webhook.IsPlaceholder(served))
		current, err := vwcs.Get(ctx, webhook.ConfigurationName, metav1.GetOptions{})
		require.NoError(t, err)
		current.Webhooks = served.Webhooks
		_, err = vwcs.Update(ctx, current, metav1.UpdateOptions{})
		require.NoError(t, err)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(timeout):
			t.Fatal("init --wait did not return after the hub registered its webhooks")
		}
	})
}
