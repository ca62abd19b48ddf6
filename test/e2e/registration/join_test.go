package registration_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/klusterlet/join"
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

func writeFile(t *testing.T, data []byte) string {
	p := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}
