package applied

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func res(group, resource, ns, name, uid string) workv1.AppliedManifestResourceMeta {
	return workv1.AppliedManifestResourceMeta{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: ns, Name: name},
		Version:            "v1", UID: uid,
	}
}

func TestNames(t *testing.T) {
	h := HubHash("https://127.0.0.1:6443")
	assert.Len(t, h, 64)
	assert.NotEqual(t, h, HubHash("https://127.0.0.1:6444"))
	n := Name(h, "web")
	assert.Equal(t, h+"-web", n)

	w, ok := WorkName(h, n)
	assert.True(t, ok)
	assert.Equal(t, "web", w)
	_, ok = WorkName(HubHash("other"), n)
	assert.False(t, ok)
	_, ok = WorkName(h, h+"-")
	assert.False(t, ok)
}

func TestStale(t *testing.T) {
	cm := res("", "configmaps", "ns", "a", "u1")
	cmRecreated := res("", "configmaps", "ns", "a", "u9")
	deploy := res("apps", "deployments", "ns", "d", "u2")
	ns := res("", "namespaces", "", "ns", "u3")
	cases := []struct {
		name      string
		prev, cur []workv1.AppliedManifestResourceMeta
		want      []workv1.AppliedManifestResourceMeta
	}{
		{"nothing recorded", nil, []workv1.AppliedManifestResourceMeta{cm}, nil},
		{"unchanged", []workv1.AppliedManifestResourceMeta{cm, ns}, []workv1.AppliedManifestResourceMeta{ns, cm}, nil},
		{"manifest removed", []workv1.AppliedManifestResourceMeta{ns, cm, deploy}, []workv1.AppliedManifestResourceMeta{ns, cm},
			[]workv1.AppliedManifestResourceMeta{deploy}},
		{"recreated resource is not stale", []workv1.AppliedManifestResourceMeta{cm}, []workv1.AppliedManifestResourceMeta{cmRecreated}, nil},
		{"all removed", []workv1.AppliedManifestResourceMeta{cm, deploy}, nil, []workv1.AppliedManifestResourceMeta{cm, deploy}},
		{"same name other group is different", []workv1.AppliedManifestResourceMeta{res("example.com", "configmaps", "ns", "a", "x")},
			[]workv1.AppliedManifestResourceMeta{cm}, []workv1.AppliedManifestResourceMeta{res("example.com", "configmaps", "ns", "a", "x")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Stale(tc.prev, tc.cur))
		})
	}
}

func TestMerge(t *testing.T) {
	a := res("", "configmaps", "ns", "a", "1")
	b := res("", "configmaps", "ns", "b", "2")
	a2 := res("", "configmaps", "ns", "a", "3")
	assert.Equal(t, []workv1.AppliedManifestResourceMeta{a2, b}, Merge([]workv1.AppliedManifestResourceMeta{a2}, []workv1.AppliedManifestResourceMeta{a, b}))
	assert.Equal(t, []workv1.AppliedManifestResourceMeta{b}, Merge(nil, []workv1.AppliedManifestResourceMeta{b, b}))
}

func amw(name string, rs ...workv1.AppliedManifestResourceMeta) workv1.AppliedManifestWork {
	return workv1.AppliedManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: workv1.AppliedManifestWorkStatus{AppliedResources: rs}}
}

func TestOwnedElsewhere(t *testing.T) {
	cm := res("", "configmaps", "ns", "a", "u1")
	all := []workv1.AppliedManifestWork{amw("h-self", cm), amw("h-other", res("", "configmaps", "ns", "a", "u1"))}
	assert.True(t, OwnedElsewhere(cm, "h-self", all), "another work records the same object")
	assert.False(t, OwnedElsewhere(cm, "h-self", all[:1]), "only we record it")
	assert.False(t, OwnedElsewhere(cm, "h-self", []workv1.AppliedManifestWork{amw("h-self", cm), amw("h-other", res("", "configmaps", "ns", "a", "u2"))}),
		"another work owned an earlier object with that name")
	assert.False(t, OwnedElsewhere(cm, "h-self", []workv1.AppliedManifestWork{amw("h-other", res("", "configmaps", "ns", "b", "u1"))}))
}

func TestOrphaned(t *testing.T) {
	cm := res("", "configmaps", "ns", "a", "u1")
	deploy := res("apps", "deployments", "ns", "d", "u2")
	selective := &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "d"}}}}
	cases := []struct {
		name string
		r    workv1.AppliedManifestResourceMeta
		opt  *workv1.DeleteOption
		want bool
	}{
		{"default deletes", cm, nil, false},
		{"foreground deletes", cm, &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground}, false},
		{"orphan keeps", cm, &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}, true},
		{"selective keeps a match", deploy, selective, true},
		{"selective deletes others", cm, selective, false},
		{"selective without rules deletes", cm, &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Orphaned(tc.r, tc.opt)) })
	}
}

func TestOfThisHub(t *testing.T) {
	record := func(hub, agent string, labels map[string]string) *workv1.AppliedManifestWork {
		return &workv1.AppliedManifestWork{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: workv1.AppliedManifestWorkSpec{HubHash: hub, AgentID: agent, ManifestWorkName: "w"}}
	}
	cases := []struct {
		name string
		amw  *workv1.AppliedManifestWork
		want bool
	}{
		{"its own", record("h", "agent-2", map[string]string{ClusterLabel: "c1"}), true},
		{"its own, unlabelled", record("h", "agent-2", nil), true},
		{"an earlier name of this cluster's agent", record("h", "agent-1", map[string]string{ClusterLabel: "c1"}), true},
		{"an older agent that did not label its cluster", record("h", "agent-1", nil), true},
		{"another cluster's agent on the same apiserver", record("h", "agent-x", map[string]string{ClusterLabel: "c2"}), false},
		{"another hub, even its own agent ID", record("other", "agent-2", nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, OfThisHub(tc.amw, "h", "agent-2", "c1"))
		})
	}
}
