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
	ssa := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}
	ro := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
	fb := []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
	cr := []workv1.ConditionRule{{Type: workv1.WellKnownConditionsType, Condition: "Complete"}}
	id := func(g, r, ns, n string) workv1.ResourceIdentifier {
		return workv1.ResourceIdentifier{Group: g, Resource: r, Namespace: ns, Name: n}
	}
	cfgs := []workv1.ManifestConfigOption{
		{ResourceIdentifier: id("apps", "deployments", "web", "api"), UpdateStrategy: ssa},
		{ResourceIdentifier: id("", "configmaps", "*", "settings"), FeedbackRules: fb},
		{ResourceIdentifier: id("", "configmaps", "web", "*"), UpdateStrategy: ro, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType}}},
		{ResourceIdentifier: id("batch", "jobs", "team-*", "*-migrate"), ConditionRules: cr},
	}
	cases := []struct {
		name                        string
		group, resource, ns, object string
		want                        *workv1.ManifestConfigOption // nil for none
	}{
		{"exact", "apps", "deployments", "web", "api", &workv1.ManifestConfigOption{UpdateStrategy: ssa}},
		{"other name", "apps", "deployments", "web", "db", nil},
		{"group must match", "extensions", "deployments", "web", "api", nil},
		{"wildcard namespace", "", "configmaps", "anywhere", "settings", &workv1.ManifestConfigOption{FeedbackRules: fb}},
		{"wildcard name", "", "configmaps", "web", "other", &workv1.ManifestConfigOption{UpdateStrategy: ro, FeedbackRules: cfgs[2].FeedbackRules}},
		{"several apply: the first setting each field gives it", "", "configmaps", "web", "settings", &workv1.ManifestConfigOption{UpdateStrategy: ro, FeedbackRules: fb}},
		{"globs", "batch", "jobs", "team-a", "db-migrate", &workv1.ManifestConfigOption{ConditionRules: cr}},
		{"globs must match whole", "batch", "jobs", "other-team-a", "db-migrate", nil},
		{"no match", "", "secrets", "web", "x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ConfigFor(cfgs, tc.group, tc.resource, tc.ns, tc.object)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			tc.want.ResourceIdentifier = id(tc.group, tc.resource, tc.ns, tc.object)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, value string
		want           bool
	}{
		{"a", "a", true}, {"a", "b", false}, {"*", "", true}, {"*", "anything", true},
		{"app-*", "app-web", true}, {"app-*", "app-", true}, {"app-*", "ap", false},
		{"*-db", "web-db", true}, {"*-db", "web-dbx", false}, {"a*b*c", "abc", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false},
		{"a*a", "a", false},
	} {
		assert.Equal(t, tc.want, match(tc.pattern, tc.value), "%q ~ %q", tc.pattern, tc.value)
	}
}
