package configpolicy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/test/testenv"
)

// The engine acts only with the rights of its identity: what RBAC refuses is
// refused, and the policy says so instead of failing silently. Its own
// cluster, so the package's admin engine does not interfere.
func TestEngineIdentityIsConfined(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Clusters: 1, NoHub: true})
	admin := env.Clusters[0].Config
	ak := kubernetes.NewForConfigOrDie(admin)
	ad := dynamic.NewForConfigOrDie(admin)

	// policy-engine may run policies and read ConfigMaps, nothing more.
	_, err := ak.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-engine"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{policyv1.GroupName}, Resources: []string{"configurationpolicies"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{policyv1.GroupName}, Resources: []string{"configurationpolicies/status"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ak.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-engine"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "policy-engine"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "policy-engine"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ak.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "existing"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	engine := rest.CopyConfig(admin)
	engine.Impersonate = rest.ImpersonationConfig{UserName: "policy-engine"}
	runCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	_, err = configpolicy.Start(runCtx, configpolicy.Options{Config: engine, RetryInterval: 200 * time.Millisecond})
	require.NoError(t, err)

	create := func(y string) {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
		_, err := ad.Resource(policiesGVR).Namespace("default").Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: create-cm}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: new, namespace: default}, data: {a: "1"}}
`)
	create(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: delete-cm}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: existing, namespace: default}}
`)
	create(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: read-secret}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: default}}
`)
	message := func(name string) (policyv1.ComplianceState, string) {
		u, err := ad.Resource(policiesGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		p := &policyv1.ConfigurationPolicy{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p))
		if len(p.Status.CompliancyDetails) == 0 {
			return p.Status.ComplianceState, ""
		}
		return p.Status.ComplianceState, p.Status.CompliancyDetails[0].Conditions[0].Message
	}
	eventually := func(name, want string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assertT) {
			state, msg := message(name)
			assertEqual(c, policyv1.NonCompliant, state)
			assertEqual(c, want, msg)
		}, timeout, tick)
	}
	eventually("create-cm", "configmaps [new] in namespace default is missing, and cannot be created, reason: `configmaps is forbidden: "+
		`User "policy-engine" cannot create resource "configmaps" in API group "" in the namespace "default"`+"`")
	eventually("delete-cm", "configmaps [existing] in namespace default exists, and cannot be deleted, reason: `"+`configmaps "existing" is forbidden: `+
		`User "policy-engine" cannot delete resource "configmaps" in API group "" in the namespace "default"`+"`")
	eventually("read-secret", `Error retrieving an object for object-template at index [0]: cannot read secrets default/s: secrets is forbidden: `+
		`User "policy-engine" cannot list resource "secrets" in API group "" at the cluster scope`)

	_, err = ak.CoreV1().ConfigMaps("default").Get(ctx, "new", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing was created")
	_, err = ak.CoreV1().ConfigMaps("default").Get(ctx, "existing", metav1.GetOptions{})
	require.NoError(t, err, "nothing was deleted")

	// Once the permission is granted, the refused action is retried without
	// any change to the policy or the objects.
	_, err = ak.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-engine-create"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ak.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-engine-create"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "policy-engine-create"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "policy-engine"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assertT) {
		state, msg := message("create-cm")
		assertEqual(c, policyv1.Compliant, state)
		assertEqual(c, "configmaps [new] found as specified in namespace default", msg)
	}, timeout, tick)
}
