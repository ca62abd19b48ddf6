package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
	"flotilla.dev/flotilla/hub/scheme"
)

// asUser returns a client that impersonates user.
func asUser(t *testing.T, user string) client.Client {
	cfg := rest.CopyConfig(hubConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

func TestBindingRequiresBindPermission(t *testing.T) {
	s := newScope(t, "bindperm")
	for _, name := range []string{"bindperm-allowed", "bindperm-denied"} {
		require.NoError(t, hub.Create(s.ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	// alice may create bindings in the namespace, and bind only bindperm-allowed.
	require.NoError(t, hub.Create(s.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bindings", Namespace: s.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta2.GroupName}, Resources: []string{"managedclustersetbindings"}, Verbs: []string{"create", "get", "update"}}}}))
	require.NoError(t, hub.Create(s.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-bindings", Namespace: s.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bindings"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}))
	require.NoError(t, hub.Create(s.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bindperm-bind"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta2.GroupName}, Resources: []string{"managedclustersets/bind"},
			ResourceNames: []string{"bindperm-allowed"}, Verbs: []string{"create"}}}}))
	require.NoError(t, hub.Create(s.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-bindperm-bind"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bindperm-bind"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}))
	alice := asUser(t, "alice")

	err := alice.Create(s.ctx, st.Binding("bindperm-denied", s.ns))
	require.Error(t, err, "binding a set without managedclustersets/bind must be refused")
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	assert.Contains(t, err.Error(), `user "alice" may not bind ManagedClusterSet "bindperm-denied"`)
	assert.Contains(t, err.Error(), "managedclustersets/bind")

	require.NoError(t, alice.Create(s.ctx, st.Binding("bindperm-allowed", s.ns)))

	// Re-pointing a binding at another set is refused (a binding is named after its set).
	var b clusterv1beta2.ManagedClusterSetBinding
	require.NoError(t, alice.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "bindperm-allowed"}, &b))
	b.Spec.ClusterSet = "bindperm-denied"
	err = alice.Update(s.ctx, &b)
	require.Error(t, err)

	// Someone with no rights at all is stopped by RBAC before the webhook.
	err = asUser(t, "mallory").Create(s.ctx, st.Binding("bindperm-allowed", s.ns))
	assert.True(t, apierrors.IsForbidden(err), "got %v", err)
}

func TestBindingMustBeNamedAfterItsSet(t *testing.T) {
	s := newScope(t, "bindname")
	b := st.Binding("bindname", s.ns)
	b.Name = "something-else"
	err := hub.Create(s.ctx, b)
	require.Error(t, err, "even an admin may not create a binding named differently from its set")
	assert.Contains(t, err.Error(), "must be named after its set")
}
