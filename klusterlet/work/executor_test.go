package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// grant binds a Role in ns giving the ServiceAccount exec/deployer the verbs
// on resources of group.
func grant(t *testing.T, ns, name, group string, resources, verbs []string) {
	t.Helper()
	ctx := context.Background()
	_, err := spoke1.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: verbs}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = spoke1.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "exec", Name: "deployer"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestExecutor: a work with spec.executor applies only what its
// ServiceAccount may do on the managed cluster, writes as that account (the
// apiserver's own checks apply, such as RBAC escalation), and reports each
// refused manifest Applied=False naming the executor, object and verbs.
func TestExecutor(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"exec", "exec-other"} {
		_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	all := []string{"get", "create", "update", "patch", "delete"}
	grant(t, "exec", "configmaps", "", []string{"configmaps"}, all)
	grant(t, "exec", "roles", rbacv1.GroupName, []string{"roles"}, all)

	secretsRole := map[string]interface{}{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]interface{}{"name": "reads-secrets", "namespace": "exec"},
		"rules":    []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"secrets"}, "verbs": []interface{}{"get"}}}}
	w := newWork(t, "cluster1", "as-deployer",
		configMap("exec", "allowed", map[string]interface{}{"k": "v"}),
		configMap("exec-other", "denied", map[string]interface{}{"k": "v"}),
		secretsRole)
	w.w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "exec", Name: "deployer"}}}
	w.create(t)

	got := eventuallyWork(t, "cluster1", "as-deployer", func(w *workv1.ManifestWork) bool {
		c0, c1, c2 := manifestCond(w, 0, "Applied"), manifestCond(w, 1, "Applied"), manifestCond(w, 2, "Applied")
		return c0 != nil && c0.Status == "True" && c1 != nil && c1.Status == "False" && c2 != nil && c2.Status == "False"
	}, "the allowed manifest applies, the others are refused")
	assert.True(t, condIs(got.Status.Conditions, "Applied", "False"))
	_, err := getCM(t, "exec", "allowed")
	require.NoError(t, err, "applied as the executor")
	assert.Equal(t, `Failed to apply manifest: executor ServiceAccount exec/deployer may not get, create, update, patch, delete configmaps "denied" in namespace exec-other on the managed cluster; grant it these verbs there (RBAC), or remove spec.executor`,
		manifestCond(got, 1, "Applied").Message)
	_, err = getCM(t, "exec-other", "denied")
	assert.True(t, apierrors.IsNotFound(err), "nothing applied with the agent's own permissions")
	// The SubjectAccessReview allows creating roles; the apiserver refuses a
	// role granting more than the executor holds: the write was impersonated.
	assert.Contains(t, manifestCond(got, 2, "Applied").Message, `user "system:serviceaccount:exec:deployer" (groups=["system:serviceaccounts" "system:serviceaccounts:exec" "system:authenticated"]) is attempting to grant RBAC permissions not currently held`)
	_, err = spoke1.RbacV1().Roles("exec").Get(ctx, "reads-secrets", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	t.Run("rights granted later: the refused manifests apply", func(t *testing.T) {
		grant(t, "exec-other", "configmaps", "", []string{"configmaps"}, all)
		grant(t, "exec", "secrets", "", []string{"secrets"}, []string{"get"})
		waitApplied(t, "cluster1", "as-deployer")
		_, err := getCM(t, "exec-other", "denied")
		require.NoError(t, err)
	})
	deleteWork(t, "cluster1", "as-deployer")
	_, err = getCM(t, "exec", "allowed")
	assert.True(t, apierrors.IsNotFound(err), "deleted with the work")
}
