package hubtemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

type objects map[string]map[string]any // "Kind ns/name" -> object

func (o objects) Get(_ context.Context, _, kind, ns, name string) (*unstructured.Unstructured, error) {
	if v, ok := o[kind+" "+ns+"/"+name]; ok {
		return &unstructured.Unstructured{Object: v}, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, name)
}

func TestResolve(t *testing.T) {
	src := objects{
		"ConfigMap gov/site":  {"data": map[string]any{"region": "eu-west", "east-1": "10.0.0.1"}},
		"Secret gov/creds":    {"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("s3cret"))}},
		"Secret other/creds":  {"data": map[string]any{"password": "eA=="}},
		"ConfigMap gov/other": {"metadata": map[string]any{"name": "other"}, "data": map[string]any{"k": "v"}},
	}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "east-1", Labels: map[string]string{"env": "prod"}},
		Status: clusterv1.ManagedClusterStatus{ClusterClaims: []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: "abc"}}}}
	key := []byte(strings.Repeat("k", 32))
	iv := []byte(strings.Repeat("i", IVSize))
	opts := Options{Namespace: "gov", Cluster: cluster, Source: src, Key: key, IV: iv}

	tests := []struct {
		name, in, want, err string
	}{
		{name: "no template: unchanged", in: `{"a":"{{ .x }}"}`, want: `{"a":"{{ .x }}"}`},
		{name: "cluster name and labels", in: `{"a":"{{hub .ManagedClusterName hub}}","b":"{{hub index .ManagedClusterLabels \"env\" hub}}"}`,
			want: `{"a":"east-1","b":"prod"}`},
		{name: "fromConfigMap, keyed by the cluster", in: `{"ip":"{{hub fromConfigMap \"\" \"site\" .ManagedClusterName hub}}"}`, want: `{"ip":"10.0.0.1"}`},
		{name: "fromClusterClaim", in: `{"id":"{{hub fromClusterClaim \"id.k8s.io\" hub}}"}`, want: `{"id":"abc"}`},
		{name: "lookup in the policy namespace", in: `{"k":"{{hub (lookup \"v1\" \"ConfigMap\" \"gov\" \"other\").data.k hub}}"}`, want: `{"k":"v"}`},
		{name: "lookup of a missing object is empty", in: `{"k":"{{hub (lookup \"v1\" \"ConfigMap\" \"gov\" \"nope\").data hub}}"}`, want: `{"k":"\u003cno value\u003e"}`},
		{name: "another namespace is refused", in: `{"p":"{{hub fromSecret \"other\" \"creds\" \"password\" hub}}"}`,
			err: `fromSecret: namespace "other" is not allowed: hub templates only read the policy's namespace "gov"`},
		{name: "lookup of another namespace is refused", in: `{"p":"{{hub (lookup \"v1\" \"Secret\" \"other\" \"creds\").data hub}}"}`,
			err: `lookup: namespace "other" is not allowed`},
		{name: "lookup of another cluster is refused", in: `{"p":"{{hub (lookup \"cluster.open-cluster-management.io/v1\" \"ManagedCluster\" \"\" \"west\").metadata hub}}"}`,
			err: `lookup: ManagedCluster "west" is not allowed`},
		{name: "missing ConfigMap key", in: `{"x":"{{hub fromConfigMap \"gov\" \"site\" \"nope\" hub}}"}`, err: `ConfigMap gov/site has no key "nope"`},
		{name: "missing ConfigMap", in: `{"x":"{{hub fromConfigMap \"gov\" \"gone\" \"k\" hub}}"}`, err: `fromConfigMap: ConfigMap gov/gone: configmaps "gone" not found`},
		{name: "exact function error", in: `{"x":"{{hub fromClusterClaim \"nope\" hub}}"}`, err: `fromClusterClaim: ManagedCluster east-1 reports no claim "nope"`},
		{name: "missing claim", in: `{"x":"{{hub fromClusterClaim \"nope\" hub}}"}`, err: `ManagedCluster east-1 reports no claim "nope"`},
		{name: "syntax error", in: `{"x":"{{hub fromConfigMap hub}"}`, err: `bad character`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Resolve(context.Background(), []byte(tc.in), opts)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				if tc.name == "exact function error" {
					assert.Equal(t, tc.err, err.Error())
				}
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestFromSecretIsEncrypted(t *testing.T) {
	src := objects{"Secret gov/creds": {"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("s3cret"))}}}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	key := []byte(strings.Repeat("k", 32))
	iv := []byte(strings.Repeat("i", IVSize))
	got, refs, err := Resolve(context.Background(), []byte(`{"data":{"password":"{{hub fromSecret \"gov\" \"creds\" \"password\" hub}}"},"v":"{{hub \"plain\" | protect hub}}"}`),
		Options{Namespace: "gov", Cluster: cluster, Source: src, Key: key, IV: iv})
	require.NoError(t, err)
	assert.NotContains(t, string(got), "s3cret")
	assert.NotContains(t, string(got), base64.StdEncoding.EncodeToString([]byte("s3cret")))
	assert.Contains(t, refs, Ref{APIVersion: "v1", Kind: "Secret", Namespace: "gov", Name: "creds"})

	var obj struct {
		Data struct{ Password string }
		V    string
	}
	require.NoError(t, json.Unmarshal(got, &obj))
	for enc, want := range map[string]string{obj.Data.Password: base64.StdEncoding.EncodeToString([]byte("s3cret")), obj.V: "plain"} {
		require.True(t, strings.HasPrefix(enc, ProtectedPrefix), enc)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(enc, ProtectedPrefix))
		require.NoError(t, err)
		plain, err := Decrypt(key, iv, raw)
		require.NoError(t, err)
		assert.Equal(t, want, string(plain))
	}

	// Another cluster's key cannot read it.
	other := []byte(strings.Repeat("o", 32))
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(obj.V, ProtectedPrefix))
	plain, err := Decrypt(other, iv, raw)
	assert.True(t, err != nil || string(plain) != "plain")

	// Without a key, fromSecret fails rather than leak the value.
	_, _, err = Resolve(context.Background(), []byte(`{"p":"{{hub fromSecret \"gov\" \"creds\" \"password\" hub}}"}`),
		Options{Namespace: "gov", Cluster: cluster, Source: src})
	assert.ErrorContains(t, err, "no encryption key")
}
