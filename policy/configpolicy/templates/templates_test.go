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
		{"toLiteral reads a string as YAML", `{"config":"{{ \"{}\" | toLiteral }}","list":"{{ \"[a, b]\" | toLiteral }}"}`,
			map[string]any{"config": map[string]any{}, "list": []any{"a", "b"}}, false, ""},
		{"skipObject", `{"v":"{{ skipObject }}"}`, nil, true, ""},
		{"skipObject false", `{"v":"{{ skipObject false }}x"}`, map[string]any{"v": "x"}, false, ""},
		// sprig's functions, by upstream's names and with sprig's behaviour.
		{"sprig split gives a map", `{"v":"{{ (split \".\" \"a.b.c\")._1 }}"}`, map[string]any{"v": "b"}, false, ""},
		{"sprig ternary, dict, get, add", `{"v":"{{ ternary \"yes\" \"no\" (eq (add 1 2) 3) }}-{{ get (dict \"k\" \"x\") \"k\" }}"}`, map[string]any{"v": "yes-x"}, false, ""},
		{"sprig default treats empty as missing", `{"v":"{{ list | default \"none\" }}"}`, map[string]any{"v": "none"}, false, ""},
		{"sprig semverCompare, b64enc, atoi", `{"v":"{{ semverCompare \">=1.2.0\" \"1.10.0\" }}-{{ b64enc \"a\" }}-{{ add (atoi \"4\") 1 }}"}`, map[string]any{"v": "true-YQ==-5"}, false, ""},
		{"sprig toJson of a lookup", `{"v":"{{ (lookup \"v1\" \"ConfigMap\" \"c\" \"cfg\").data.flag | toJson }}"}`, map[string]any{"v": `"true"`}, false, ""},
		{"atoi of text", `{"v":"{{ atoi \"x\" }}"}`, nil, false,
			`failed to resolve the template {"v":"{{ atoi \"x\" }}"}: template: tmpl:1:7: executing "tmpl" at <atoi "x">: error calling atoi: atoi: "x" is not an integer`},
		// Errors in upstream's words: the definition quoted as stored
		// (compact, keys sorted), the line and column in its YAML form
		// (2-space indents, list items indented under their key).
		{"missing secret", `{"v":"{{ fromSecret \"s\" \"none\" \"k\" }}"}`, nil, false,
			`failed to resolve the template {"v":"{{ fromSecret \"s\" \"none\" \"k\" }}"}: template: tmpl:1:7: executing "tmpl" at <fromSecret "s" "none" "k">: error calling fromSecret: failed to get the secret none from s: secrets "none" not found`},
		{"missing configmap, in a list", `{"b":[{"name":"x","value":"{{ fromConfigMap \"c\" \"none\" \"k\" }}"}],"a":1}`, nil, false,
			`failed to resolve the template {"a":1,"b":[{"name":"x","value":"{{ fromConfigMap \"c\" \"none\" \"k\" }}"}]}: template: tmpl:4:15: executing "tmpl" at <fromConfigMap "c" "none" "k">: error calling fromConfigMap: failed getting the ConfigMap none from c: configmaps "none" not found`},
		{"copySecretData without a name", `{"data":"{{ copySecretData \"s\" \"\" }}"}`, nil, false,
			`failed to resolve the template {"data":"{{ copySecretData \"s\" \"\" }}"}: template: tmpl:1:10: executing "tmpl" at <copySecretData "s" "">: error calling copySecretData: the input is invalid: namespace and name must be specified`},
		{"missing cluster claim", `{"v":"{{ fromClusterClaim \"none\" }}"}`, nil, false,
			`failed to resolve the template {"v":"{{ fromClusterClaim \"none\" }}"}: template: tmpl:1:7: executing "tmpl" at <fromClusterClaim "none">: error calling fromClusterClaim: clusterclaims.cluster.open-cluster-management.io "none" not found`},
		// Upstream's toInt gives 0 for text; Flotilla says what is wrong.
		{"toInt of text", `{"v":"{{ \"abc\" | toInt }}"}`, nil, false,
			`failed to resolve the template {"v":"{{ \"abc\" | toInt }}"}: template: tmpl:1:15: executing "tmpl" at <toInt>: error calling toInt: toInt: "abc" is not an integer`},
		{"unknown function", `{"v":"{{ nope }}"}`, nil, false, `failed to parse the template JSON string {"v":"{{ nope }}"}: template: tmpl:1: function "nope" not defined`},
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
