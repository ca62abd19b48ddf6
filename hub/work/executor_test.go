package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	work "flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// grant binds user, in namespace ns, to write works and replica sets there
// and to execute-as each of executors (resource names).
func grant(t *testing.T, env *testenv.Env, ns, user string, executors ...string) client.Client {
	t.Helper()
	return grantWith(t, env, ns, user, "works-", rbacv1.PolicyRule{APIGroups: []string{workv1.GroupName},
		Resources: []string{"manifestworks", "manifestworkreplicasets"}, Verbs: []string{"get", "create", "update"}}, executors)
}

// grantWith binds user, in namespace ns, to rule and to execute-as each of
// executors, in a Role named prefix+user, and returns a client acting as user.
func grantWith(t *testing.T, env *testenv.Env, ns, user, prefix string, rule rbacv1.PolicyRule, executors []string) client.Client {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	rules := []rbacv1.PolicyRule{rule}
	if len(executors) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks"},
			Verbs: []string{work.ExecuteAsVerb}, ResourceNames: executors})
	}
	name := prefix + user
	_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Impersonate.UserName = user
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

func executor(ns, name string) *workv1.ManifestWorkExecutor {
	return &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: ns, Name: name}}}
}

func replicaSet(ns, name string, e *workv1.ManifestWorkExecutor, manifests ...string) *workv1alpha1.ManifestWorkReplicaSet {
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			PlacementRefs:        []workv1alpha1.LocalPlacementReference{{Name: "everywhere"}},
			ManifestWorkTemplate: mw(ns, name, manifests...).Spec,
		}}
	rs.Spec.ManifestWorkTemplate.Executor = e
	return rs
}

// TestNilExecutorValidating: with the option on, a work without an executor is
// checked as OCM's default executor, the agent's own identity: refused without
// execute-as on system:serviceaccount::klusterlet-work-sa, admitted with it.
func TestNilExecutorValidating(t *testing.T) {
	env, admin, _ := startHubWith(t, work.Options{ManifestLimit: testLimit, NilExecutorValidating: true})
	ctx := context.Background()
	alice := grant(t, env, "cluster1", "alice", "system:serviceaccount:app:deployer")
	bob := grant(t, env, "cluster1", "bob", work.DefaultExecutorName)

	t.Run("a work without executor is refused without execute-as on the default executor", func(t *testing.T) {
		err := alice.Create(ctx, mw("cluster1", "as-agent", cm("app", "a", 1)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `ManifestWork cluster1/as-agent: user "alice" may not use the work agent's own identity (spec.executor is unset`)
		assert.Contains(t, err.Error(), `execute-as work.open-cluster-management.io/manifestworks named "system:serviceaccount::klusterlet-work-sa" in namespace cluster1`)
	})
	t.Run("a grant in another namespace does not count", func(t *testing.T) {
		other := grant(t, env, "cluster2", "bob2")
		grant(t, env, "cluster1", "bob2", work.DefaultExecutorName)
		assert.ErrorContains(t, other.Create(ctx, mw("cluster2", "as-agent", cm("app", "a", 1))), `user "bob2" may not use the work agent's own identity`)
	})
	t.Run("a work without executor is admitted with execute-as on the default executor", func(t *testing.T) {
		require.NoError(t, bob.Create(ctx, mw("cluster1", "as-agent", cm("app", "a", 1))))
	})
	t.Run("a named executor is still judged on its own name", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, withExec(mw("cluster1", "as-deployer", cm("app", "a", 1)), executor("app", "deployer"))))
		assert.ErrorContains(t, bob.Create(ctx, withExec(mw("cluster1", "bob-deployer", cm("app", "a", 1)), executor("app", "deployer"))),
			`user "bob" may not use executor ServiceAccount app/deployer`)
	})
	t.Run("removing the executor of a work is judged", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "as-deployer"}, w))
		w.Spec.Executor = nil
		assert.ErrorContains(t, alice.Update(ctx, w), `may not use the work agent's own identity`)
	})
	t.Run("editing a work without executor needs the grant too; metadata writes pass", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "as-agent"}, w))
		w.Spec.Workload = mw("cluster1", "as-agent", cm("kube-system", "x", 1)).Spec.Workload
		assert.ErrorContains(t, alice.Update(ctx, w), `may not use the work agent's own identity`)
		w = &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "as-agent"}, w))
		w.Labels = map[string]string{"touched": "yes"}
		require.NoError(t, alice.Update(ctx, w))
	})
	t.Run("a cluster admin holds execute-as on everything", func(t *testing.T) {
		require.NoError(t, admin.Create(ctx, mw("cluster1", "admin-plain", cm("app", "a", 1))))
	})
}

func withExec(w *workv1.ManifestWork, e *workv1.ManifestWorkExecutor) *workv1.ManifestWork {
	w.Spec.Executor = e
	return w
}

// TestReplicaSetExecutor: the hub writes a replica set's works itself, so the
// author of the replica set is checked for the template's executor, in the
// replica set's namespace.
func TestReplicaSetExecutor(t *testing.T) {
	env, admin, _ := startHub(t)
	ctx := context.Background()
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
	carol := grant(t, env, "apps", "carol", "system:serviceaccount:app:deployer")
	// dave may execute-as app/deployer in cluster1 only: that grant says
	// nothing about replica sets in apps.
	dave := grant(t, env, "apps", "dave")
	grant(t, env, "cluster1", "dave", "system:serviceaccount:app:deployer")

	t.Run("a template executor the author may use is admitted", func(t *testing.T) {
		require.NoError(t, carol.Create(ctx, replicaSet("apps", "deploy", executor("app", "deployer"), cm("app", "a", 1))))
	})
	t.Run("a template executor the author may not use is refused, naming field and permission", func(t *testing.T) {
		err := carol.Create(ctx, replicaSet("apps", "escalate", executor("kube-system", "admin"), cm("app", "a", 1)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `ManifestWorkReplicaSet apps/escalate: user "carol" may not use executor ServiceAccount kube-system/admin in namespace apps`)
		assert.Contains(t, err.Error(), `spec.manifestWorkTemplate.executor needs RBAC permission to execute-as`)
	})
	t.Run("a grant in a cluster namespace does not cover the replica set's namespace", func(t *testing.T) {
		assert.ErrorContains(t, dave.Create(ctx, replicaSet("apps", "dave", executor("app", "deployer"), cm("app", "a", 1))),
			`user "dave" may not use executor ServiceAccount app/deployer in namespace apps`)
	})
	t.Run("an update that switches the template's executor is refused", func(t *testing.T) {
		require.NoError(t, carol.Create(ctx, replicaSet("apps", "plain", nil, cm("app", "a", 1))))
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		require.NoError(t, carol.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "plain"}, rs))
		rs.Spec.ManifestWorkTemplate.Executor = executor("kube-system", "admin")
		assert.ErrorContains(t, carol.Update(ctx, rs), `may not use executor ServiceAccount kube-system/admin`)
	})
	t.Run("widening an admin's replica set to more placements is refused", func(t *testing.T) {
		require.NoError(t, admin.Create(ctx, replicaSet("apps", "admin-rs", executor("kube-system", "admin"), cm("app", "a", 1))))
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		require.NoError(t, carol.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "admin-rs"}, rs))
		rs.Spec.PlacementRefs = append(rs.Spec.PlacementRefs, workv1alpha1.LocalPlacementReference{Name: "more"})
		assert.ErrorContains(t, carol.Update(ctx, rs), `user "carol" may not use executor ServiceAccount kube-system/admin`)
		rs = &workv1alpha1.ManifestWorkReplicaSet{}
		require.NoError(t, carol.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "admin-rs"}, rs))
		rs.Labels = map[string]string{"touched": "yes"}
		require.NoError(t, carol.Update(ctx, rs), "a metadata write passes")
	})
	t.Run("a malformed executor is refused", func(t *testing.T) {
		rs := replicaSet("apps", "no-sa", &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount}}, cm("app", "a", 1))
		assert.ErrorContains(t, admin.Create(ctx, rs), "spec.manifestWorkTemplate.executor.subject.serviceAccount is required")
	})
	t.Run("template manifests are validated as a work's", func(t *testing.T) {
		err := carol.Create(ctx, replicaSet("apps", "dup", nil, cm("app", "a", 1), cm("app", "a", 1)))
		assert.ErrorContains(t, err, "spec.manifestWorkTemplate.workload.manifests: manifest 1 (ConfigMap app/a) duplicates manifest 0")
	})
	t.Run("without the nil-executor option a template without executor needs no grant", func(t *testing.T) {
		require.NoError(t, dave.Create(ctx, replicaSet("apps", "dave-plain", nil, cm("app", "a", 1))))
	})
}

// TestReplicaSetNilExecutor: with the option on, a template without executor
// needs execute-as on the default executor in the replica set's namespace.
func TestReplicaSetNilExecutor(t *testing.T) {
	env, admin, _ := startHubWith(t, work.Options{ManifestLimit: testLimit, NilExecutorValidating: true})
	ctx := context.Background()
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
	carol := grant(t, env, "apps", "carol", "system:serviceaccount:app:deployer")
	erin := grant(t, env, "apps", "erin", work.DefaultExecutorName)

	err := carol.Create(ctx, replicaSet("apps", "plain", nil, cm("app", "a", 1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `user "carol" may not use the work agent's own identity (spec.manifestWorkTemplate.executor is unset`)
	require.NoError(t, erin.Create(ctx, replicaSet("apps", "plain", nil, cm("app", "a", 1))))
	require.NoError(t, carol.Create(ctx, replicaSet("apps", "named", executor("app", "deployer"), cm("app", "a", 1))))
}

// grantAddons binds user, in namespace ns, to write ManagedClusterAddOns there
// and to execute-as each of executors.
func grantAddons(t *testing.T, env *testenv.Env, ns, user string, executors ...string) client.Client {
	t.Helper()
	return grantWith(t, env, ns, user, "addons-", rbacv1.PolicyRule{APIGroups: []string{addonv1alpha1.GroupName},
		Resources: []string{"managedclusteraddons"}, Verbs: []string{"get", "create", "update"}}, executors)
}

func addon(ns, name, installNs string, configs ...addonv1alpha1.AddOnConfig) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNs, Configs: configs}}
}

// mirrorConfig points at an AddOnDeploymentConfig in the writer's own
// namespace: its registries could swap the agent's image.
var mirrorConfig = addonv1alpha1.AddOnConfig{
	ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
	ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "mallory-ns", Name: "mirror"},
}

// TestAddonConfigNeedsExecuteAs: with the nil-executor option on, the hub
// writes an addon's works as the agent's own identity, so whoever chooses what
// the agent runs (spec.configs) or where (spec.installNamespace) needs the
// execute-as a work without executor needs; enabling an addon with the hub's
// defaults does not.
func TestAddonConfigNeedsExecuteAs(t *testing.T) {
	env, admin, _ := startHubWith(t, work.Options{ManifestLimit: testLimit, NilExecutorValidating: true})
	ctx := context.Background()
	mallory := grantAddons(t, env, "cluster1", "mallory")
	ops := grantAddons(t, env, "cluster1", "ops", work.DefaultExecutorName)

	t.Run("enabling an addon with the hub's defaults passes", func(t *testing.T) {
		require.NoError(t, mallory.Create(ctx, addon("cluster1", "plain", "")))
	})
	t.Run("spec.configs on create is refused, naming field and permission", func(t *testing.T) {
		err := mallory.Create(ctx, addon("cluster1", "mirrored", "", mirrorConfig))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `ManagedClusterAddOn cluster1/mirrored: user "mallory" may not use the work agent's own identity (spec.configs chooses what the addon's agent runs`)
		assert.Contains(t, err.Error(), `execute-as work.open-cluster-management.io/manifestworks named "system:serviceaccount::klusterlet-work-sa" in namespace cluster1`)
	})
	t.Run("spec.installNamespace on create is refused", func(t *testing.T) {
		assert.ErrorContains(t, mallory.Create(ctx, addon("cluster1", "in-kube-system", "kube-system")),
			`user "mallory" may not use the work agent's own identity (spec.installNamespace chooses`)
	})
	t.Run("adding configs or moving the install namespace by update is refused; metadata passes", func(t *testing.T) {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "plain"}, mca))
		mca.Spec.Configs = []addonv1alpha1.AddOnConfig{mirrorConfig}
		assert.ErrorContains(t, mallory.Update(ctx, mca), `may not use the work agent's own identity (spec.configs`)
		mca.Spec.Configs = nil
		mca.Spec.InstallNamespace = "kube-system"
		assert.ErrorContains(t, mallory.Update(ctx, mca), `may not use the work agent's own identity (spec.installNamespace`)
		mca.Spec.InstallNamespace = ""
		mca.Labels = map[string]string{"touched": "yes"}
		require.NoError(t, mallory.Update(ctx, mca))
	})
	t.Run("a grant in another cluster namespace does not count", func(t *testing.T) {
		other := grantAddons(t, env, "cluster2", "trent")
		grantAddons(t, env, "cluster1", "trent2", work.DefaultExecutorName)
		assert.ErrorContains(t, other.Create(ctx, addon("cluster2", "mirrored", "", mirrorConfig)), `user "trent" may not use`)
	})
	t.Run("with execute-as on the default executor configs and install namespace pass", func(t *testing.T) {
		require.NoError(t, ops.Create(ctx, addon("cluster1", "mirrored", "addons", mirrorConfig)))
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "mirrored"}, mca))
		mca.Labels = map[string]string{"touched": "yes"}
		require.NoError(t, mallory.Update(ctx, mca), "an update that keeps the configs passes")
		require.NoError(t, admin.Create(ctx, addon("cluster1", "admin", "addons", mirrorConfig)))
	})
}

// TestAddonConfigWithoutOption: off, the option checks no ManagedClusterAddOn.
func TestAddonConfigWithoutOption(t *testing.T) {
	env, _, _ := startHub(t)
	mallory := grantAddons(t, env, "cluster1", "mallory")
	require.NoError(t, mallory.Create(context.Background(), addon("cluster1", "mirrored", "kube-system", mirrorConfig)))
}
