package hub

import (
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"flotilla.dev/flotilla/hub/registration/rbac"
)

// TestCacheOptionsFilters pins which of the hub's caches are filtered: the
// readers of these types through the cache were audited for it
// (docs/benchmarks.md). RoleBindings must stay whole: an addon's permission
// RoleBinding has no cluster label and is read through the cache.
func TestCacheOptionsFilters(t *testing.T) {
	got := map[string]string{}
	for obj, by := range cacheOptions().ByObject {
		key := fmt.Sprintf("%T", obj)
		switch {
		case by.Label != nil:
			got[key] = "label " + by.Label.String()
		case by.Field != nil:
			got[key] = "field " + by.Field.String()
		default:
			got[key] = "whole"
		}
	}
	want := map[string]string{
		fmt.Sprintf("%T", &coordinationv1.Lease{}):      "field metadata.name=managed-cluster-lease",
		fmt.Sprintf("%T", &corev1.Namespace{}):          "label " + rbac.Labelled().String(),
		fmt.Sprintf("%T", &rbacv1.ClusterRole{}):        "label " + rbac.Labelled().String(),
		fmt.Sprintf("%T", &rbacv1.ClusterRoleBinding{}): "label " + rbac.Labelled().String(),
	}
	if len(got) != len(want) {
		t.Fatalf("filtered caches %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	if _, ok := got[fmt.Sprintf("%T", &rbacv1.RoleBinding{})]; ok {
		t.Errorf("RoleBindings are filtered: an addon's permission RoleBinding would fall out of the cache")
	}
}
