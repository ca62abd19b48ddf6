package registration_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestJoinBadInput: each bad input gives a clear error and writes nothing.
func TestJoinBadInput(t *testing.T) {
	ctx := context.Background()
	wrongCA := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(wrongCA, env.Clusters[0].CAPEM, 0o600))
	notPEM := filepath.Join(t.TempDir(), "garbage")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))

	// "taken" is registered from cluster1; cluster2 may not claim it.
	newAgent(t, env.Clusters[0], "taken", "agent-taken").start()
	require.Eventually(t, func() bool { return hubCluster(t, "taken") != nil }, timeout, tick)

	tests := []struct {
		name string
		opts join.Options
		want string
	}{
		{"wrong token", join.Options{HubToken: "not-a-token", ClusterName: "c-wrong-token"}, "bootstrap token"},
		{"unreachable hub", join.Options{HubAPIServer: "https://127.0.0.1:1", ClusterName: "c-unreachable"}, "cannot reach the hub"},
		{"wrong CA", join.Options{CAFile: wrongCA, ClusterName: "c-wrong-ca"}, "not signed by the given CA"},
		{"CA file not PEM", join.Options{CAFile: notPEM, ClusterName: "c-garbage-ca"}, "no PEM certificate"},
		{"name not a DNS label", join.Options{ClusterName: "Cluster_1"}, "not a valid cluster name"},
		{"http hub", join.Options{HubAPIServer: "http://127.0.0.1:80", ClusterName: "c-http"}, "not an https URL"},
		{"CA hash of another CA", join.Options{CAHash: pki.CAHashes(env.Clusters[0].CAPEM)[0], ClusterName: "c-wrong-hash"}, "the hub CA does not match --ca-hash"},
		{"CA file with another hash", join.Options{CAFile: writeFile(t, env.Hub.CAPEM), CAHash: pki.CAHashes(env.Clusters[0].CAPEM)[0], ClusterName: "c-wrong-hash2"}, "the hub CA does not match --ca-hash"},
		{"malformed CA hash", join.Options{CAHash: "md5:abc", ClusterName: "c-bad-hash"}, "is not sha256: followed by 64 hex digits"},
		{"name owned by another cluster", join.Options{ClusterName: "taken"}, "already registered on the hub by another managed cluster"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.SpokeConfig = env.Clusters[1].Config
			o.NoDeployment = false
			o.AgentNamespace = "bad-input-" + string(rune('a'+i))
			if o.HubAPIServer == "" {
				o.HubAPIServer = env.Hub.URL
			}
			if o.HubToken == "" {
				o.HubToken = token
			}
			err := join.Join(ctx, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			_, err = kube(env.Clusters[1].Config).CoreV1().Namespaces().Get(ctx, o.AgentNamespace, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "nothing written on the managed cluster: %v", err)
		})
	}
}

// TestJoinPinsCAHash: join with the CA hash `init` printed succeeds.
func TestJoinPinsCAHash(t *testing.T) {
	var progress strings.Builder
	require.NoError(t, join.Join(context.Background(), join.Options{SpokeConfig: env.Clusters[1].Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: "pinned", AgentNamespace: "agent-pinned", NoDeployment: true, CAHash: pki.CAHashes(env.Hub.CAPEM)[0], Progress: &progress}))
	assert.NotContains(t, progress.String(), "unverified connection")
}

// TestJoinWritesKlusterlet: without --no-deployment, join writes the klusterlet
// manifests; unjoin removes them.
func TestJoinWritesKlusterlet(t *testing.T) {
	ctx := context.Background()
	spoke := env.Clusters[1]
	require.NoError(t, join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: "deployed", AgentNamespace: "agent-deployed", CAFile: writeFile(t, env.Hub.CAPEM)}))
	cs := kube(spoke.Config)
	_, err := cs.AppsV1().Deployments("agent-deployed").Get(ctx, "klusterlet", metav1.GetOptions{})
	require.NoError(t, err)
	sec, err := cs.CoreV1().Secrets("agent-deployed").Get(ctx, "bootstrap-hub-kubeconfig", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, string(sec.Data["kubeconfig"]), env.Hub.URL)

	require.NoError(t, join.Unjoin(ctx, join.UnjoinOptions{SpokeConfig: spoke.Config, AgentNamespace: "agent-deployed"}))
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "agent-deployed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick)
}

// TestAcceptRefusesTwoRequesters: when two agents ask for one name, accept
// approves neither.
func TestAcceptRefusesTwoRequesters(t *testing.T) {
	newAgent(t, env.Clusters[0], "contested", "agent-contested").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "contested")) == 1 }, timeout, tick)
	// A second agent (same bootstrap token, another agent name) asks for the same cluster.
	createCSR(t, kube(bootstrapConfig(t)), "contested", "contested", "intruder", nil)

	err := accept.Accept(context.Background(), accept.Options{Config: env.Hub.Config, Clusters: []string{"contested"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing")
	for _, csr := range clusterCSRs(t, "contested") {
		assert.False(t, approved(&csr), csr.Name)
	}
	assert.False(t, hubCluster(t, "contested").Spec.HubAcceptsClient)

	err = accept.Accept(context.Background(), accept.Options{Config: env.Hub.Config, Clusters: []string{"no-such-cluster"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not found on the hub")
}

// TestAcceptRefusesImpostorWithSameName: a token holder reads the real agent's
// CSR subject and asks with the very same cluster and agent name but its own key.
// accept approves neither; and once the cluster has joined, a lone new bootstrap
// CSR under its name is approved only with Force.
func TestAcceptRefusesImpostorWithSameName(t *testing.T) {
	ctx := context.Background()
	boot := kube(bootstrapConfig(t))
	newAgent(t, env.Clusters[0], "lookalike", "agent-lookalike").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "lookalike")) == 1 }, timeout, tick)
	real := clusterCSRs(t, "lookalike")[0]
	agentName := csrAgent(t, &real)
	impostor := createCSR(t, boot, "lookalike", "lookalike", agentName, nil)

	err := accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"lookalike"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing")
	assert.Contains(t, err.Error(), real.Name)
	assert.Contains(t, err.Error(), impostor)
	assert.Contains(t, err.Error(), "2 distinct keys")
	err = accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"lookalike"}, Force: true})
	require.Error(t, err, "force does not pick between two CSRs")
	for _, csr := range clusterCSRs(t, "lookalike") {
		assert.False(t, approved(&csr), csr.Name)
	}
	assert.False(t, hubCluster(t, "lookalike").Spec.HubAcceptsClient)

	// The admin removes the impostor's CSR; the real agent is accepted.
	require.NoError(t, kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Delete(ctx, impostor, metav1.DeleteOptions{}))
	acceptClusters(t, "lookalike")
	waitCondition(t, "lookalike", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)

	// Once joined, an impostor's lone CSR under the same name is not approved:
	// accept reports it and changes nothing.
	impostor = createCSR(t, boot, "lookalike", "lookalike", agentName, nil)
	var out bytes.Buffer
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"lookalike"}, Progress: &out}))
	assert.Contains(t, out.String(), "already joined")
	assert.Contains(t, out.String(), impostor)
	assert.Contains(t, out.String(), "--force")
	got, err := boot.CertificatesV1().CertificateSigningRequests().Get(ctx, impostor, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, approved(got))
}

// csrAgent is the agent name in a CSR's subject CN.
func csrAgent(t *testing.T, r *certificatesv1.CertificateSigningRequest) string {
	t.Helper()
	block, _ := pem.Decode(r.Spec.Request)
	require.NotNil(t, block)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	parts := strings.Split(req.Subject.CommonName, ":")
	return parts[len(parts)-1]
}

func writeFile(t *testing.T, data []byte) string {
	p := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// TestAutoApproveUsers: a first CSR from a listed requester is approved and its
// cluster accepted without `accept`; the same request from another user waits.
func TestAutoApproveUsers(t *testing.T) {
	ctx := context.Background()
	for _, user := range []string{autoJoiner, "not-listed"} {
		grantBootstrap(t, user)
	}
	ask := func(user, cluster string) string {
		cfg := rest.CopyConfig(env.Hub.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		_, err := clusters(cfg).ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{})
		require.NoError(t, err)
		key := newKeyPEM(t)
		csr, err := registration.BuildCSR(cluster, "a1", key, 0)
		require.NoError(t, err)
		created, err := kube(cfg).CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		require.NoError(t, err)
		return created.Name
	}
	auto := ask(autoJoiner, "auto-approved")
	manual := ask("not-listed", "needs-accept")
	require.Eventually(t, func() bool {
		csr, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, auto, metav1.GetOptions{})
		return err == nil && approved(csr) && hubCluster(t, "auto-approved").Spec.HubAcceptsClient
	}, timeout, tick)
	waitCondition(t, "auto-approved", clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionTrue)
	require.Never(t, func() bool {
		csr, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, manual, metav1.GetOptions{})
		return err != nil || approved(csr) || hubCluster(t, "needs-accept").Spec.HubAcceptsClient
	}, 2*time.Second, tick)

	// Auto-approve never overrides the admin's deny: the CSR is held (pending,
	// an event says why) and the cluster stays denied.
	require.NoError(t, updateCluster(env.Hub.Config, "auto-approved", func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = false }))
	waitCondition(t, "auto-approved", clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionFalse, "HubClusterAdminDenied")
	again := autoJoinerCSR(t, "auto-approved", "a2")
	heldEvent(t, again, "auto-approve never overrides a deny")
	csr, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, again, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, csr.Status.Conditions, "held: neither approved nor denied")
	assert.False(t, hubCluster(t, "auto-approved").Spec.HubAcceptsClient, "a denied cluster is not re-accepted by auto-approve")
}

// grantBootstrap binds user to the bootstrap ClusterRole.
func grantBootstrap(t *testing.T, user string) {
	_, err := kube(env.Hub.Config).RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-bootstrap-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "open-cluster-management:bootstrap"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// The apiserver's authorizer learns of the binding from its own watch:
	// wait until it grants what the binding does, so a CSR filed next is not
	// refused for a moment.
	require.Eventually(t, func() bool {
		sar, err := kube(env.Hub.Config).AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Verb: "create"}}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	}, timeout, tick, "the bootstrap grant for %s in effect", user)
}

func newKeyPEM(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// TestAgentRefusesNameOfAnotherCluster: an agent started without `join` (so
// without its check) for a name another managed cluster registered makes no CSR.
func TestAgentRefusesNameOfAnotherCluster(t *testing.T) {
	newAgent(t, env.Clusters[0], "owned", "agent-owned").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "owned")) == 1 }, timeout, tick)

	bootstrap, err := registration.BootstrapKubeconfig(env.Hub.URL, env.Hub.CAPEM, token)
	require.NoError(t, err)
	intruder := &agent{t: t, spoke: env.Clusters[1], name: "owned", ns: "agent-intruder", opts: klusterlet.Options{DisableWork: true,
		Registration: registration.Options{ClusterName: "owned", AgentNamespace: "agent-intruder", SpokeConfig: env.Clusters[1].Config,
			BootstrapKubeconfig: bootstrap, HubKubeconfigDir: t.TempDir(), RetryInterval: 200 * time.Millisecond}}}
	t.Cleanup(intruder.stop)
	_, err = kube(env.Clusters[1].Config).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-intruder"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	intruder.start()
	require.Never(t, func() bool { return len(clusterCSRs(t, "owned")) > 1 }, 3*time.Second, tick, "no CSR for a name owned by another cluster")
}

// TestReservedNamesRefused: names of hub namespaces and of the group every agent
// shares cannot become ManagedClusters, not even for the hub admin.
func TestReservedNamesRefused(t *testing.T) {
	for _, name := range []string{"kube-system", "default", "managed-clusters", "open-cluster-management", "open-cluster-management-hub", "flotilla-system"} {
		_, err := clusters(env.Hub.Config).ClusterV1().ManagedClusters().Create(context.Background(),
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `ManagedCluster name "`+name+`" is reserved`)
	}
}

// TestCSRFloodDoesNotBlockAgent: a token holder files many CSRs under a cluster's
// label; the agent still asks (it counts only its own), and a CSR failing a check
// is Denied, naming the check, instead of lingering.
func TestCSRFloodDoesNotBlockAgent(t *testing.T) {
	ctx := context.Background()
	boot := kube(bootstrapConfig(t))
	for i := 0; i < registration.MaxPendingCSRs; i++ {
		createCSR(t, boot, "flooded", "flooded", "junk", nil)
	}
	forged := createCSR(t, boot, "flooded", "other", "x", nil)
	require.Eventually(t, func() bool {
		csr, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, forged, metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied {
				return strings.Contains(c.Message, "subject-organization")
			}
		}
		return false
	}, timeout, tick, "a CSR failing a check is denied with the check's name")

	newAgent(t, env.Clusters[1], "flooded", "agent-flooded").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "flooded")) == registration.MaxPendingCSRs+2 }, timeout, tick,
		"the agent files its own CSR despite the flood")
}

// TestAcceptIsAllOrNothing: a missing cluster among several makes accept
// change nothing, naming the missing one.
func TestAcceptIsAllOrNothing(t *testing.T) {
	newAgent(t, env.Clusters[0], "all-or-nothing", "agent-aon").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "all-or-nothing")) == 1 }, timeout, tick)

	err := accept.Accept(context.Background(), accept.Options{Config: env.Hub.Config, Clusters: []string{"all-or-nothing", "doesnotexist"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster doesnotexist: ManagedCluster doesnotexist not found on the hub")
	assert.Contains(t, err.Error(), "no cluster was accepted")
	assert.False(t, hubCluster(t, "all-or-nothing").Spec.HubAcceptsClient, "the existing cluster was not accepted")
	for _, csr := range clusterCSRs(t, "all-or-nothing") {
		assert.False(t, approved(&csr), csr.Name)
	}
}
