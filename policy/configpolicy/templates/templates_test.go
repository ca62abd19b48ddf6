package templates

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fake is a Reader over a few objects (pure unit test).
type fake []*unstructured.Unstructured

func (f fake) Get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	for _, o := range f {
		if o.GroupVersionKind() == gvk && o.GetNamespace() == ns && o.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}

func (f fake) List(gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range f {
		if o.GroupVersionKind() == gvk && (ns == "" || o.GetNamespace() == ns) {
			out = append(out, o)
		}
	}
	return out, nil
}

func u(apiVersion, kind, ns, name string, extra map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range extra {
		o.Object[k] = v
	}
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

var cluster = fake{
	u("v1", "Secret", "s", "creds", map[string]any{"data": map[string]any{"password": "czNjcjN0", "user": "YWRtaW4="}}),
	u("v1", "ConfigMap", "c", "cfg", map[string]any{"data": map[string]any{"replicas": "3", "flag": "true", "cert": "line1\nline2"}}),
	u("cluster.open-cluster-management.io/v1alpha1", "ClusterClaim", "", "id.k8s.io", map[string]any{"spec": map[string]any{"value": "c-123"}}),
}

func TestResolveJSON(t *testing.T) {
	cases := []struct {
		name, in string
		want     map[string]any
		skip     bool
		err      string
	}{
		{"fromSecret keeps base64", `{"data":{"p":"{{ fromSecret \"s\" \"creds\" \"password\" }}"}}`, map[string]any{"data": map[string]any{"p": "czNjcjN0"}}, false, ""},
		{"base64dec", `{"v":"{{ fromSecret \"s\" \"creds\" \"user\" | base64dec }}"}`, map[string]any{"v": "admin"}, false, ""},
		{"base64enc", `{"v":"{{ \"admin\" | base64enc }}"}`, map[string]any{"v": "YWRtaW4="}, false, ""},
		{"toInt and toBool are typed", `{"n":"{{ fromConfigMap \"c\" \"cfg\" \"replicas\" | toInt }}","b":"{{ fromConfigMap \"c\" \"cfg\" \"flag\" | toBool }}"}`,
			map[string]any{"n": int64(3), "b": true}, false, ""},
		{"fromClusterClaim", `{"v":"{{ fromClusterClaim \"id.k8s.io\" }}"}`, map[string]any{"v": "c-123"}, false, ""},
		{"lookup missing is empty", `{"v":"{{ (lookup \"v1\" \"ConfigMap\" \"c\" \"none\").data }}"}`, map[string]any{"v": "<no value>"}, false, ""},
		{"copyConfigMapData", `{"data":"{{ copyConfigMapData \"c\" \"cfg\" }}"}`, map[string]any{"data": map[string]any{"replicas": "3", "flag": "true", "cert": "line1\nline2"}}, false, ""},
		{"autoindent keeps a block under its key", `{"cert":"{{ fromConfigMap \"c\" \"cfg\" \"cert\" | autoindent }}"}`, map[string]any{"cert": "line1 line2"}, false, ""},
		{"skipObject", `{"v":"{{ skipObject }}"}`, nil, true, ""},
		{"skipObject false", `{"v":"{{ skipObject false }}x"}`, map[string]any{"v": "x"}, false, ""},
		{"missing secret", `{"v":"{{ fromSecret \"s\" \"none\" \"k\" }}"}`, nil, false,
			`failed to resolve the template: template: tmpl:1:7: executing "tmpl" at <fromSecret "s" "none" "k">: error calling fromSecret: secret "none" not found in namespace "s"`},
		{"toInt of text", `{"v":"{{ \"abc\" | toInt }}"}`, nil, false,
			`failed to resolve the template: template: tmpl:1:15: executing "tmpl" at <toInt>: error calling toInt: toInt: "abc" is not an integer`},
		{"unknown function", `{"v":"{{ nope }}"}`, nil, false, `failed to parse the template: template: tmpl:1: function "nope" not defined`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, skip, err := ResolveJSON([]byte(tc.in), cluster)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.skip, skip)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseErrorsAreThePolicys(t *testing.T) {
	_, err := Resolve("{{ range }}", cluster)
	require.True(t, IsParseError(err))
	_, err = Resolve(`{{ fromSecret "a" "b" "c" }}`, cluster)
	require.Error(t, err)
	require.False(t, IsParseError(err))
}
