package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// TestGetListsAroundUndecodable: objects no Go client can decode (stored while
// the admission policies were off) do not make `flotilla get` fail: the good
// objects are listed and each bad one is named in a warning.
func TestGetListsAroundUndecodable(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{})
	kc := env.Hub.KubeconfigPath
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	create := func(text string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(text), &u.Object))
		require.NoError(t, admin.Create(ctx, u))
		return u
	}
	create("{apiVersion: v1, kind: Namespace, metadata: {name: apps}}")
	create("{apiVersion: v1, kind: Namespace, metadata: {name: cluster1}}")
	create("{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {name: good, namespace: apps}, spec: {}}")
	create("{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: cluster1}, spec: {hubAcceptsClient: true}}")
	manifests := "{workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}]}}"
	create("{apiVersion: work.open-cluster-management.io/v1, kind: ManifestWork, metadata: {name: good, namespace: cluster1}, spec: " + manifests + "}")

	// Admission off, then one bad object of each kind.
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	require.NoError(t, admin.List(ctx, &bindings))
	for _, b := range bindings.Items {
		if strings.HasPrefix(b.Name, "flotilla-") {
			require.NoError(t, admin.Delete(ctx, &b))
		}
	}
	bad := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte("{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {name: bad, namespace: apps}, spec: {numberOfClusters: 2147483648}}"), &bad.Object))
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NoError(c, admin.Create(ctx, bad.DeepCopy())) }, time.Minute, 200*time.Millisecond)
	create("{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: bad}, spec: {leaseDurationSeconds: 2147483648}}")
	w := create("{apiVersion: work.open-cluster-management.io/v1, kind: ManifestWork, metadata: {name: bad, namespace: cluster1}, spec: " + manifests + "}")
	require.NoError(t, admin.Status().Patch(ctx, w, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"resourceStatus":{"manifests":[{"resourceMeta":{"ordinal":2147483648},"conditions":[]}]}}}`))))

	for _, tc := range []struct {
		args       []string
		good, warn string
	}{
		{[]string{"get", "placements", "-A"}, "good", "warning: Placement apps/bad is not listed: it cannot be decoded (json: cannot unmarshal number 2147483648"},
		{[]string{"get", "clusters"}, "cluster1", "warning: ManagedCluster bad is not listed: it cannot be decoded"},
		{[]string{"get", "works", "--cluster", "cluster1"}, "good", "warning: ManifestWork cluster1/bad is not listed: it cannot be decoded"},
	} {
		out, err := flotilla(t, append(tc.args, "--kubeconfig", kc)...)
		require.NoError(t, err, "flotilla %s: %s", strings.Join(tc.args, " "), out)
		assert.Contains(t, out, tc.good, "flotilla %s", strings.Join(tc.args, " "))
		assert.Contains(t, out, tc.warn, "flotilla %s", strings.Join(tc.args, " "))
		assert.Equal(t, 1, strings.Count(out, "warning:"), "one warning, for the one bad object: %s", out)
	}
}
