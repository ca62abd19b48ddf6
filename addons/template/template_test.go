package template

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/addons/framework"
)

func tmpl(manifests ...string) *addonv1alpha1.AddOnTemplate {
	t := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: "hello-1"}, Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: "hello"}}
	for _, m := range manifests {
		t.Spec.AgentSpec.Workload.Manifests = append(t.Spec.AgentSpec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return t
}

var (
	cluster = &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	mca     = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "cluster1"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Namespace: "addons"}}
)

func TestPlaceholders(t *testing.T) {
	a := Addon{Template: tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hello","namespace":"{{INSTALL_NAMESPACE}}"},` +
		`"data":{"cluster":"{{CLUSTER_NAME}}","ns":"<< AddonInstallNamespace >>","kc":"{{HUB_KUBECONFIG}}","level":"{{LEVEL}}"}}`)}
	_, err := a.Manifests(cluster, mca)
	assert.ErrorContains(t, err, "no value for LEVEL")

	objs, err := a.ManifestsWithConfig(cluster, mca, &addonv1alpha1.AddOnDeploymentConfigSpec{
		CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LEVEL", Value: `a "quoted" value`}}})
	require.NoError(t, err)
	require.Len(t, objs, 1)
	u := objs[0].(*unstructured.Unstructured)
	assert.Equal(t, "addons", u.GetNamespace())
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	assert.Equal(t, map[string]string{"cluster": "cluster1", "ns": "addons", "kc": HubKubeconfigPath, "level": `a "quoted" value`}, data)
}

// TestPlaceholderQuotesStayInTheString: a variable that starts or ends with a
// quote (or a backslash) stays one string value; it cannot end the string it
// stands in and change the manifest's structure.
func TestPlaceholderQuotesStayInTheString(t *testing.T) {
	a := Addon{Template: tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hello"},"data":{"a":"{{A}}","b":"{{B}}"}}`)}
	for _, v := range [][2]string{{`"`, `"`}, {`x"`, `"y`}, {`\`, `,"c":"d`}, {`""`, `\`}} {
		objs, err := a.ManifestsWithConfig(cluster, mca, &addonv1alpha1.AddOnDeploymentConfigSpec{
			CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "A", Value: v[0]}, {Name: "B", Value: v[1]}}})
		require.NoError(t, err, "values %q", v)
		data, _, _ := unstructured.NestedStringMap(objs[0].(*unstructured.Unstructured).Object, "data")
		assert.Equal(t, map[string]string{"a": v[0], "b": v[1]}, data)
	}
}

func TestBadTemplates(t *testing.T) {
	_, err := Addon{Template: tmpl()}.Manifests(cluster, mca)
	assert.ErrorContains(t, err, "has no manifests")
	_, err = Addon{Template: tmpl(`{not json`)}.Manifests(cluster, mca)
	assert.ErrorContains(t, err, "manifest 0")
}

func TestCustomSigner(t *testing.T) {
	signer := func(name string, ca addonv1alpha1.SigningCARef, subject *addonv1alpha1.Subject) addonv1alpha1.RegistrationSpec {
		return addonv1alpha1.RegistrationSpec{Type: addonv1alpha1.RegistrationTypeCustomSigner,
			CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{SignerName: name, SigningCA: ca, Subject: subject}}
	}
	hubCA := addonv1alpha1.SigningCARef{Name: SigningCASecret}
	subject := &addonv1alpha1.Subject{User: "agent", Groups: []string{"agents"}}
	ok := tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
	ok.Spec.Registration = []addonv1alpha1.RegistrationSpec{signer("example.com/agents", hubCA, subject)}
	a := Addon{Template: ok}
	_, err := a.Manifests(cluster, mca)
	require.NoError(t, err)
	reg := a.Options().Registration
	require.NotNil(t, reg)
	assert.Equal(t, "example.com/agents", reg.SignerName)
	assert.Equal(t, subject, reg.Subject)
	assert.Empty(t, reg.Bindings)

	for _, tc := range []struct {
		name string
		regs []addonv1alpha1.RegistrationSpec
		want string
	}{
		{"no config", []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeCustomSigner}}, "needs customSigner"},
		{"kubernetes signer", []addonv1alpha1.RegistrationSpec{signer("kubernetes.io/kube-apiserver-client", hubCA, nil)}, "not a custom signer"},
		{"another CA", []addonv1alpha1.RegistrationSpec{signer("example.com/agents", addonv1alpha1.SigningCARef{Namespace: "team", Name: "my-ca"}, nil)},
			"only with its addon CA"},
		{"the hub's CA in another namespace", []addonv1alpha1.RegistrationSpec{signer("example.com/agents", addonv1alpha1.SigningCARef{Namespace: "team", Name: SigningCASecret}, nil)},
			"only with its addon CA"},
		{"two registrations", []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}, signer("example.com/agents", hubCA, nil)},
			"only one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
			bad.Spec.Registration = tc.regs
			_, err := Addon{Template: bad}.Manifests(cluster, mca)
			assert.ErrorContains(t, err, tc.want)
			assert.Nil(t, Addon{Template: bad}.Options().Registration, "a refused registration publishes nothing")
		})
	}
}

func TestOptions(t *testing.T) {
	a := tmpl(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent","namespace":"addons"}}`)
	a.Spec.Registration = []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient, KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{
		HubPermissions: []addonv1alpha1.HubPermissionConfig{
			{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "reader"}},
			{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
				Namespace: "shared", RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}}},
		}}}}
	o := Addon{Template: a}.Options()
	require.NotNil(t, o.Registration)
	assert.Equal(t, []framework.RoleBinding{
		{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"}},
		{Namespace: "shared", RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}},
	}, o.Registration.Bindings)
	assert.Equal(t, framework.HealthWorkField, o.Health.Mode, "a Deployment's availability is the health")
	assert.Equal(t, framework.HealthNone, Addon{Template: tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}.Options().Health.Mode)
}
