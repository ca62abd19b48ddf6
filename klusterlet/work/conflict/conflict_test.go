package conflict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

const hashKey = "work.flotilla.dev/manifest-hash"

func record(name, uid, work string, deleting bool) *workv1.AppliedManifestWork {
	amw := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: map[string]string{applied.ClusterLabel: "cluster1"}},
		Spec:       workv1.AppliedManifestWorkSpec{ManifestWorkName: work, AgentID: "cluster1"},
	}
	if deleting {
		now := metav1.Now()
		amw.DeletionTimestamp = &now
	}
	return amw
}

func ref(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: name, UID: types.UID(uid)}
}

func object(hash string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetName("shared")
	u.SetNamespace("default")
	if hash != "" {
		u.SetAnnotations(map[string]string{hashKey: hash})
	}
	u.SetOwnerReferences(owners)
	return u
}

func TestDecide(t *testing.T) {
	records := map[string]*workv1.AppliedManifestWork{
		"h-a":    record("h-a", "uid-a", "a", false),
		"h-b":    record("h-b", "uid-b", "b", false),
		"h-gone": record("h-gone", "uid-gone", "gone", true),
		"h-old":  record("h-old", "uid-new", "old", false), // re-created: the reference is stale
	}
	lookup := func(name string) *workv1.AppliedManifestWork { return records[name] }
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "uid-d"}
	for _, tc := range []struct {
		name   string
		self   string
		live   *unstructured.Unstructured
		holder string
	}{
		{"object does not exist", "uid-b", nil, ""},
		{"identical content is shared", "uid-b", object("H1", ref("h-a", "uid-a")), ""},
		{"nobody holds it", "uid-b", object("H2"), ""},
		{"only non-work owners", "uid-b", object("H2", other), ""},
		{"another work holds it", "uid-b", object("H2", ref("h-a", "uid-a")), "cluster1/a"},
		{"the first holder keeps it", "uid-a", object("H2", ref("h-a", "uid-a"), ref("h-b", "uid-b")), ""},
		{"a later holder does not", "uid-b", object("H2", other, ref("h-a", "uid-a"), ref("h-b", "uid-b")), "cluster1/a"},
		{"a record being deleted holds nothing", "uid-b", object("H2", ref("h-gone", "uid-gone")), ""},
		{"a missing record holds nothing", "uid-b", object("H2", ref("h-missing", "uid-x")), ""},
		{"a stale reference holds nothing", "uid-b", object("H2", ref("h-old", "uid-old")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, found := Decide(types.UID(tc.self), "H1", hashKey, tc.live, lookup)
			assert.Equal(t, tc.holder != "", found)
			assert.Equal(t, tc.holder, h.Work)
		})
	}
}

func TestErrorNamesObjectAndHolder(t *testing.T) {
	err := &Error{Object: "ConfigMap default/shared", Holder: Holder{Work: "cluster1/work-a"}}
	assert.Equal(t, "ConfigMap default/shared is managed by ManifestWork cluster1/work-a with different content; "+
		"this work leaves it unchanged until the conflict ends (make both manifests identical, or remove it from one of the works)", err.Error())
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	k := applied.Key{Resource: "configmaps", Namespace: "default", Name: "shared"}
	other := applied.Key{Resource: "configmaps", Namespace: "default", Name: "other"}

	assert.Empty(t, r.Set("a", map[applied.Key]string{k: "H1", other: "X"}), "nobody else to wake")
	assert.Equal(t, []string{"a"}, r.Set("b", map[applied.Key]string{k: "H2"}), "a learns of b's claim")
	assert.Equal(t, []string{"b"}, r.Others("a", k, "H1"))
	assert.Equal(t, []string{"a"}, r.Others("b", k, "H2"))
	assert.Empty(t, r.Others("a", other, "X"))

	assert.Empty(t, r.Set("b", map[applied.Key]string{k: "H2"}), "nothing changed: nobody woken (no loop)")
	assert.Equal(t, []string{"a"}, r.Set("b", map[applied.Key]string{k: "H1"}), "b now matches: a is woken")
	assert.Empty(t, r.Others("a", k, "H1"), "identical content is no conflict")

	assert.Equal(t, []string{"a"}, r.Set("b", map[applied.Key]string{k: "H3"}))
	assert.Equal(t, []string{"b"}, r.Drop("a"), "a gone: b is woken")
	assert.Empty(t, r.Others("b", k, "H3"))
	assert.Empty(t, r.Drop("b"))
	assert.Empty(t, r.byKey)
	assert.Empty(t, r.byWork)
}
