package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func hubArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	d := find(objs, "Deployment", Name)
	require.NotNil(t, d)
	cs, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	args, _, err := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
	require.NoError(t, err)
	return args
}

func TestRenderAddonImage(t *testing.T) {
	objs, err := Render(Options{Image: "registry.local:5000/ocm/flotilla:v1"})
	require.NoError(t, err)
	assert.Contains(t, hubArgs(t, objs), "--addon-image=registry.local:5000/ocm/flotilla:v1", "the addon agents run the hub's image by default")

	objs, err = Render(Options{Image: "registry.local:5000/ocm/flotilla:v1", AddonImage: "mirror.example/flotilla:v2"})
	require.NoError(t, err)
	assert.Contains(t, hubArgs(t, objs), "--addon-image=mirror.example/flotilla:v2")
}

// TestRenderNilExecutorValidating: the option reaches the hub's arguments
// only when set.
func TestRenderNilExecutorValidating(t *testing.T) {
	objs, err := Render(Options{Image: "a.io/f:1"})
	require.NoError(t, err)
	assert.NotContains(t, hubArgs(t, objs), "--nil-executor-validating")
	objs, err = Render(Options{Image: "a.io/f:1", NilExecutorValidating: true})
	require.NoError(t, err)
	assert.Contains(t, hubArgs(t, objs), "--nil-executor-validating")
}

func TestRenderAddonSigners(t *testing.T) {
	const role = "open-cluster-management:flotilla-hub:addon-signers"
	objs, err := Render(Options{Image: "ghcr.io/flotilla-dev/flotilla:v1"})
	require.NoError(t, err)
	assert.Nil(t, find(objs, "ClusterRole", role), "no custom signer rights unless asked")
	assert.Nil(t, find(objs, "Role", "open-cluster-management:flotilla-hub:addon-signer-ca"))

	objs, err = Render(Options{Image: "ghcr.io/flotilla-dev/flotilla:v1", AddonSigners: []string{"example.com/agents", "flotilla.dev/*"}})
	require.NoError(t, err)
	cr := find(objs, "ClusterRole", role)
	require.NotNil(t, cr)
	rules, _, err := unstructured.NestedSlice(cr.Object, "rules")
	require.NoError(t, err)
	require.Len(t, rules, 1)
	r := rules[0].(map[string]any)
	assert.Equal(t, []any{"signers"}, r["resources"])
	assert.Equal(t, []any{"example.com/agents", "flotilla.dev/*"}, r["resourceNames"], "exactly the signers named")
	assert.Equal(t, []any{"approve", "sign"}, r["verbs"])
	require.NotNil(t, find(objs, "ClusterRoleBinding", role))
	ca := find(objs, "Role", "open-cluster-management:flotilla-hub:addon-signer-ca")
	require.NotNil(t, ca)
	assert.Equal(t, Namespace, ca.GetNamespace())
	caRules, _, _ := unstructured.NestedSlice(ca.Object, "rules")
	for _, x := range caRules {
		x := x.(map[string]any)
		assert.NotContains(t, x["verbs"], "list", "no Secret is listed")
		assert.NotContains(t, x["verbs"], "watch", "no Secret is watched")
		if names, ok := x["resourceNames"]; ok {
			assert.Equal(t, []any{"addon-signer-ca"}, names)
		} else {
			assert.Equal(t, []any{"create"}, x["verbs"], "only create is unnamed")
		}
	}
}

func TestRenderRefusesBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		o    Options
		want string
	}{
		"kubernetes.io signer":  {Options{Image: "a.io/f:1", AddonSigners: []string{"kubernetes.io/kube-apiserver-client"}}, `addon signer "kubernetes.io/kube-apiserver-client" is not a custom signer`},
		"signer without path":   {Options{Image: "a.io/f:1", AddonSigners: []string{"example.com"}}, `addon signer "example.com" is not a custom signer`},
		"signer of a subdomain": {Options{Image: "a.io/f:1", AddonSigners: []string{"x.kubernetes.io/y"}}, "is not a custom signer"},
		"quote in a signer":     {Options{Image: "a.io/f:1", AddonSigners: []string{`example.com/a"b`}}, "is not a custom signer"},
		"bad addon image":       {Options{Image: "a.io/f:1", AddonImage: "UPPER/Case:x y"}, "addon image"},
		"no hub image":          {Options{}, "hub image"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(tc.o)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
