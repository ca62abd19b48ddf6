package addons_test

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/approve"
	"flotilla.dev/flotilla/addons/deploy"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
)

func templateAddon(t *testing.T, addon string, perm addonv1alpha1.HubPermissionConfig) {
	t.Helper()
	ctx := context.Background()
	tmpl := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: addon + "-v1"}, Spec: addonv1alpha1.AddOnTemplateSpec{
		AddonName: addon,
		AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + addon + `"},"data":{"cluster":"{{CLUSTER_NAME}}"}}`)}}}}},
		Registration: []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient, KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{
			HubPermissions: []addonv1alpha1.HubPermissionConfig{perm}}}},
	}}
	require.NoError(t, hubCli.Create(ctx, tmpl))
	require.NoError(t, hubCli.Create(ctx, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
				DefaultConfig:       &addonv1alpha1.ConfigReferent{Name: tmpl.Name}}}}}))
}

// TestTemplateAddon: an addon defined by an AddOnTemplate alone (no Go code)
// installs, registers with the ClusterRole its template binds in the cluster
// namespace, and its agent's credential works; a template binding rights in
// another cluster's namespace is refused.
func TestTemplateAddon(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, hubCli.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "hello-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}))
	templateAddon(t, "hello", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
		CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "hello-reader"}})
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"hello"}, Clusters: []string{"cluster1"}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, "cluster1", "hello") })

	eventuallyCondition(t, "cluster1", "hello", addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue)
	eventuallyCondition(t, "cluster1", "hello", addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue)
	cm, err := spoke(0).CoreV1().ConfigMaps("open-cluster-management-agent-addon").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "cluster1", cm.Data["cluster"], "placeholders filled per cluster")

	var cred *addonagent.HubCredential
	require.Eventually(t, func() bool {
		cred, err = addonagent.ReadHubCredential(ctx, spoke(0), "open-cluster-management-agent-addon", "hello")
		return err == nil
	}, timeout, tick, "the klusterlet writes hello-hub-kubeconfig")
	asAgent := kubernetes.NewForConfigOrDie(cred.Config)
	require.Eventually(t, func() bool {
		_, err := asAgent.CoreV1().ConfigMaps("cluster1").List(ctx, metav1.ListOptions{})
		return err == nil
	}, timeout, tick, "the template's ClusterRole is bound in the cluster namespace")
	_, err = asAgent.CoreV1().ConfigMaps("cluster2").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "and nowhere else: %v", err)

	// A credential that is no longer valid for the agent's subject is replaced
	// (the same path as a certificate past its rotation point).
	sec, err := spoke(0).CoreV1().Secrets("open-cluster-management-agent-addon").Get(ctx, "hello-hub-kubeconfig", metav1.GetOptions{})
	require.NoError(t, err)
	old := string(sec.Data["tls.crt"])
	klusterletCert, err := spoke(0).CoreV1().Secrets("open-cluster-management-agent").Get(ctx, "hub-kubeconfig-secret", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["tls.crt"] = klusterletCert.Data["tls.crt"] // valid, but another subject's
	_, err = spoke(0).CoreV1().Secrets(sec.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := spoke(0).CoreV1().Secrets(sec.Namespace).Get(ctx, sec.Name, metav1.GetOptions{})
		return err == nil && string(got.Data["tls.crt"]) != old && string(got.Data["tls.crt"]) != string(klusterletCert.Data["tls.crt"])
	}, timeout, tick, "the klusterlet issues a new certificate for the agent")
	cred, err = addonagent.ReadHubCredential(ctx, spoke(0), "open-cluster-management-agent-addon", "hello")
	require.NoError(t, err)
	_, err = kubernetes.NewForConfigOrDie(cred.Config).CoreV1().ConfigMaps("cluster1").List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "the new certificate works")

	// A template granting rights in another cluster's namespace.
	templateAddon(t, "nosy", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace,
		SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{Namespace: "cluster2", RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "hello-reader"}}})
	_, err = ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"nosy"}, Clusters: []string{"cluster1"}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, "cluster1", "nosy") })
	refused := eventuallyCondition(t, "cluster1", "nosy", addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionFalse)
	assert.Contains(t, refused.Message, "another managed cluster's")
	var bindings rbacv1.RoleBindingList
	require.NoError(t, hubCli.List(ctx, &bindings))
	for _, b := range bindings.Items {
		assert.NotEqual(t, "nosy", b.Labels["open-cluster-management.io/addon-name"], "nothing bound for nosy: %s/%s", b.Namespace, b.Name)
	}
}

// An AddOnTemplate author cannot make the hub bind a role it holds itself (the
// hub's own ClusterRole), a role that writes ManifestWorks, or any role in a
// namespace an admin did not open to addon agents; a namespace opted in with
// the label takes a harmless role.
func TestTemplateHubPermissionsRefused(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, hubCli.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "work-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"}, Verbs: []string{"create"}}}}))
	t.Cleanup(func() {
		_ = hubCli.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "work-writer"}})
	})
	require.NoError(t, hubCli.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}))
	t.Cleanup(func() { _ = hubCli.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}}) })
	for _, ns := range []string{"team-closed", "team-open"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == "team-open" {
			n.Labels = map[string]string{deploy.GrantLabel: "true"}
		}
		require.NoError(t, hubCli.Create(ctx, n))
	}

	tests := []struct {
		addon string
		perm  addonv1alpha1.HubPermissionConfig
		want  string
	}{
		{"grab-hub-role", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "open-cluster-management:flotilla-hub"}}, "system role"},
		{"grab-work", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "work-writer"}}, "create manifestworks"},
		{"grab-team", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace,
			SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{Namespace: "team-closed", RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cm-reader"}}}, "not open to addon agents"},
	}
	for _, tt := range tests {
		t.Run(tt.addon, func(t *testing.T) {
			templateAddon(t, tt.addon, tt.perm)
			_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{tt.addon}, Clusters: []string{"cluster1"}})
			require.NoError(t, err)
			t.Cleanup(func() { disable(t, "cluster1", tt.addon) })
			refused := eventuallyCondition(t, "cluster1", tt.addon, addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionFalse)
			assert.Contains(t, refused.Message, tt.want)
			var bindings rbacv1.RoleBindingList
			require.NoError(t, hubCli.List(ctx, &bindings))
			for _, b := range bindings.Items {
				assert.NotEqual(t, tt.addon, b.Labels["open-cluster-management.io/addon-name"], "nothing bound: %s/%s", b.Namespace, b.Name)
			}
		})
	}

	// Opted in, a harmless role is bound there, for cluster1's agent only.
	templateAddon(t, "team-reader", addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace,
		SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{Namespace: "team-open", RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cm-reader"}}})
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"team-reader"}, Clusters: []string{"cluster1"}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, "cluster1", "team-reader") })
	require.Eventually(t, func() bool {
		var bindings rbacv1.RoleBindingList
		if err := hubCli.List(ctx, &bindings, client.InNamespace("team-open")); err != nil {
			return false
		}
		for _, b := range bindings.Items {
			if b.Labels["open-cluster-management.io/addon-name"] == "team-reader" && b.RoleRef.Name == "cm-reader" {
				return true
			}
		}
		return false
	}, timeout, tick, "the opted-in namespace gets the binding")
}

// TestTemplateCustomSigner: an AddOnTemplate with a CustomSigner registration
// (signer flotilla.dev/test-signer, signingCA the hub's addon CA) installs with
// no Go code: the klusterlet's CSR is approved with the same checks as a Go
// addon's and signed by the CA in open-cluster-management-hub/addon-signer-ca;
// a template naming another signing CA is refused and publishes nothing.
func TestTemplateCustomSigner(t *testing.T) {
	ctx := context.Background()
	custom := func(addon string, ca addonv1alpha1.SigningCARef) {
		tmpl := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: addon + "-v1"}, Spec: addonv1alpha1.AddOnTemplateSpec{
			AddonName: addon,
			AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + addon + `"},"data":{"cluster":"{{CLUSTER_NAME}}"}}`)}}}}},
			Registration: []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{
				SignerName: customSigner, SigningCA: ca, Subject: &addonv1alpha1.Subject{User: addon + "-client", Groups: []string{addon + "-clients"}}}}},
		}}
		require.NoError(t, hubCli.Create(ctx, tmpl))
		require.NoError(t, hubCli.Create(ctx, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
				SupportedConfigs: []addonv1alpha1.ConfigMeta{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
					DefaultConfig:       &addonv1alpha1.ConfigReferent{Name: tmpl.Name}}}}}))
		_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{addon}, Clusters: []string{"cluster1"}})
		require.NoError(t, err)
		t.Cleanup(func() { disable(t, "cluster1", addon) })
	}
	custom("tsigned", addonv1alpha1.SigningCARef{Namespace: approve.SignerCANamespace, Name: approve.SignerCASecret})

	reg := eventuallyRegistration(t, "cluster1", "tsigned")
	assert.Equal(t, customSigner, reg.SignerName)
	assert.Equal(t, "tsigned-client", reg.Subject.User)
	ns := ocm.DefaultAddonInstallNamespace
	var data map[string][]byte
	require.Eventually(t, func() bool {
		sec, err := spoke(0).CoreV1().Secrets(ns).Get(ctx, ocm.AddonHubKubeconfigSecret("tsigned"), metav1.GetOptions{})
		if err != nil {
			return false
		}
		data = sec.Data
		return true
	}, timeout, tick, "the klusterlet writes the custom-signed certificate")
	assert.NotContains(t, data, "kubeconfig", "a custom signer's certificate is no hub identity")
	cert := parsePEMCert(t, data["tls.crt"])
	assert.Equal(t, "tsigned-client", cert.Subject.CommonName)
	assert.Equal(t, []string{"tsigned-clients"}, cert.Subject.Organization)
	caSec, err := kubernetes.NewForConfigOrDie(env.Hub.Config).CoreV1().Secrets(approve.SignerCANamespace).Get(ctx, approve.SignerCASecret, metav1.GetOptions{})
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(parsePEMCert(t, caSec.Data["tls.crt"]))
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "signed by the hub's addon CA")
	eventuallyCondition(t, "cluster1", "tsigned", addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue)

	// The same checks as a Go addon's: cluster1's agent asking for that
	// signer under another subject is denied.
	c := addonCSR(t, "cluster1", "tsigned", "admin", "tsigned-clients")
	c.Spec.SignerName = customSigner
	msg := eventuallyDenied(t, clusterAgent(t, 0), c)
	assert.Contains(t, msg, "matches no registration")

	// A template naming its own signing CA is refused: nothing is published.
	custom("tforeign", addonv1alpha1.SigningCARef{Namespace: "team", Name: "my-ca"})
	require.Eventually(t, func() bool {
		m, err := getAddon("cluster1", "tforeign")
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "only with its addon CA")
	}, timeout, tick, "the template naming another signing CA is refused with the reason")
	m, err := getAddon("cluster1", "tforeign")
	require.NoError(t, err)
	assert.Empty(t, m.Status.Registrations, "no registration is published for a refused template")
}
