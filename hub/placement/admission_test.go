package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
	"flotilla.dev/flotilla/internal/scheme"
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

// TestPlacementAdmission: Placements that would be misconfigured are refused
// at create and at a spec update, as Invalid, naming the field; writes that
// leave the spec alone pass.
func TestPlacementAdmission(t *testing.T) {
	s := newScope(t, "padmit")
	for _, tc := range []struct {
		name string
		p    *clusterv1beta1.Placement
		want string
	}{
		{"bad-selector", st.Placement("bad-selector", "").Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Maybe", Values: []string{"a"}}}}}).Obj(),
			`spec.predicates[0].requiredClusterSelector.labelSelector: "Maybe" is not a valid label selector operator`},
		{"bad-claims", st.Placement("bad-claims", "").Predicate(clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn}}}}).Obj(),
			"spec.predicates[0].requiredClusterSelector.claimSelector"},
		{"bad-cel", st.Placement("bad-cel", "").CEL(`managedCluster.metadata.labels[`).Obj(),
			"spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]"},
		{"bad-prioritizer", st.Placement("bad-prioritizer", "").Prioritizer("Fastest", 3).Obj(),
			`spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: unknown prioritizer "Fastest"`},
		{"bad-groups", st.Placement("bad-groups", "").Group("canary", nil).Group("canary", nil).Obj(),
			`spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName "canary" is already the name of decisionGroups[0]`},
		{"bad-number", st.Placement("bad-number", "").Number(-2).Obj(), "spec.numberOfClusters"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			tc.p.Namespace = s.ns
			err := hub.Create(s.ctx, tc.p)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	s.placement(st.Placement("good", "").CEL(`managedCluster.metadata.name != ""`).Group("canary", nil).Obj())
	t.Run("an update that breaks the spec is refused", func(t *testing.T) {
		// The controller writes the placement's status meanwhile: a conflict
		// is retried, the refusal is not.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := s.getPlacement("good")
			p.Spec.Predicates[0].RequiredClusterSelector.CelSelector.CelExpressions = []string{"1 +"}
			return hub.Update(s.ctx, p)
		})
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
		assert.Contains(t, err.Error(), "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]")
	})
	t.Run("an update of labels only passes", func(t *testing.T) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := s.getPlacement("good")
			p.Labels = map[string]string{"team": "a"}
			return hub.Update(s.ctx, p)
		}))
	})
}
