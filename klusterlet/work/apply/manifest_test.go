package apply

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		name, raw, wantErr string
	}{
		{"ok", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, ""},
		{"not json", `{`, "not a JSON object"},
		{"a list", `[1]`, "not a JSON object"},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, "no apiVersion or kind"},
		{"no name", `{"apiVersion":"v1","kind":"Secret","metadata":{}}`, "the Secret manifest has no metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Decode(workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(tc.raw)}})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "a", u.GetName())
		})
	}
}

func TestConfigFor(t *testing.T) {
	id := func(g, r, ns, n string) workv1.ManifestConfigOption {
		return workv1.ManifestConfigOption{ResourceIdentifier: workv1.ResourceIdentifier{Group: g, Resource: r, Namespace: ns, Name: n}}
	}
	cfgs := []workv1.ManifestConfigOption{
		id("apps", "deployments", "web", "api"),
		id("", "configmaps", "*", "settings"),
		id("", "configmaps", "web", "*"),
	}
	cases := []struct {
		name                        string
		group, resource, ns, object string
		want                        int // index in cfgs, -1 for none
	}{
		{"exact", "apps", "deployments", "web", "api", 0},
		{"other name", "apps", "deployments", "web", "db", -1},
		{"group must match", "extensions", "deployments", "web", "api", -1},
		{"wildcard namespace", "", "configmaps", "anywhere", "settings", 1},
		{"wildcard name", "", "configmaps", "web", "other", 2},
		{"first match wins", "", "configmaps", "web", "settings", 1},
		{"no match", "", "secrets", "web", "x", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ConfigFor(cfgs, tc.group, tc.resource, tc.ns, tc.object)
			if tc.want < 0 {
				assert.Nil(t, got)
				return
			}
			assert.Same(t, &cfgs[tc.want], got)
		})
	}
}
