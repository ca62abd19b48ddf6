package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/aggregated/aggregatedtest"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/search/searchapi"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

func searchObj(t *testing.T, y string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

// `flotilla search` through the hub's aggregated API: tables with a
// CLUSTER column, filters, -o json, and what an unknown resource says.
func TestSearchCLI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{})
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for name, e := range map[string]string{"east": "prod", "west": "dev"} {
		require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": e}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
	}
	db := filepath.Join(t.TempDir(), "search.db")
	idx, err := index.Open(ctx, db)
	require.NoError(t, err)
	for cluster, image := range map[string]string{"east": "nginx:1.25", "west": "nginx:1.24"} {
		_, err := idx.Apply(ctx, index.Change{Cluster: cluster, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
			Upserts: []*unstructured.Unstructured{searchObj(t, `{apiVersion: v1, kind: Pod, metadata: {namespace: shop, name: web-1, uid: `+cluster+`-1, labels: {app: web}},
				spec: {containers: [{name: c, image: "`+image+`"}]}, status: {phase: Running, containerStatuses: [{name: c, ready: true, restartCount: 0, state: {running: {}}}]}}`)}})
		require.NoError(t, err)
		_, err = idx.Apply(ctx, index.Change{Cluster: cluster, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true,
			Upserts: []*unstructured.Unstructured{searchObj(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {namespace: shop, name: pay, uid: `+cluster+`-pay},
				spec: {replicas: 3}, status: {readyReplicas: `+map[string]string{"east": "3", "west": "1"}[cluster]+`}}`)}})
		require.NoError(t, err)
	}
	require.NoError(t, idx.Close())

	ip, err := aggregated.HostIP()
	require.NoError(t, err)
	done, err := fleet.StartHub(ctx, hub.Options{Config: env.Hub.Config, SearchDB: db, APIAddress: ip.String()}, 2*time.Minute)
	require.NoError(t, err)
	defer func() { cancel(); <-done }()
	require.NoError(t, aggregatedtest.WaitAvailable(ctx, env.Hub.Config, searchapi.APIServiceName, time.Minute))

	kc := env.Hub.KubeconfigPath
	out, errOut, code := runPolicyCLI(t, "search", "pods", "--kubeconfig", kc, "--cluster-selector", "env=prod", "-l", "app=web", "--image", "nginx:1.25")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^CLUSTER +NAMESPACE +NAME +READY +STATUS +RESTARTS +NODE +AGE\neast +shop +web-1 +1/1 +Running +0 `, out)
	assert.NotContains(t, out, "west")

	out, errOut, code = runPolicyCLI(t, "search", "deploy", "--kubeconfig", kc, "--not-ready")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^west +shop +pay +1/3 `, out)
	assert.NotContains(t, out, "east")

	out, errOut, code = runPolicyCLI(t, "search", "po", "--kubeconfig", kc, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var l unstructured.UnstructuredList
	require.NoError(t, json.Unmarshal([]byte(out), &l.Object))
	require.NoError(t, l.UnmarshalJSON([]byte(out)))
	assert.Len(t, l.Items, 2)

	out, errOut, code = runPolicyCLI(t, "search", "pods", "--kubeconfig", kc, "--cluster", "nowhere")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "No pods found in the clusters you may see.")

	err = runCLIError(t, "search", "widgets", "--kubeconfig", kc)
	require.ErrorContains(t, err, `no cluster you may see syncs "widgets": they sync pods, deployments`)
	err = runCLIError(t, "search", "pods", "--kubeconfig", kc, "--field-selector", "spec.nodeName=n1")
	require.ErrorContains(t, err, `field "spec.nodeName" is not searched`)
}
