package addonconversion

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

const kubeSigner = "kubernetes.io/kube-apiserver-client"

var now = metav1.Unix(1700000000, 0)

func hash(ns, name, h string) *addonv1alpha1.ConfigSpecHash {
	return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}, SpecHash: h}
}

// mca is a v1alpha1 ManagedClusterAddOn with every field that maps to v1beta1 set.
func mca() *addonv1alpha1.ManagedClusterAddOn {
	adc := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	return &addonv1alpha1.ManagedClusterAddOn{
		TypeMeta: metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ManagedClusterAddOn"},
		ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "cluster1", UID: "u1", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, Finalizers: []string{"addon.open-cluster-management.io/addon-pre-delete"},
			CreationTimestamp: now},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{
			InstallNamespace: "addon-ns",
			Configs:          []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "cluster1", Name: "cfg"}}},
		},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{
			Conditions:       []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "ManagedClusterAddOnLeaseUpdated", Message: "ok", LastTransitionTime: now, ObservedGeneration: 3}},
			RelatedObjects:   []addonv1alpha1.ObjectReference{{Group: "work.open-cluster-management.io", Resource: "manifestworks", Namespace: "cluster1", Name: "addon-example-deploy-0"}},
			AddOnMeta:        addonv1alpha1.AddOnMeta{DisplayName: "Example", Description: "an example"},
			SupportedConfigs: []addonv1alpha1.ConfigGroupResource{adc},
			ConfigReferences: []addonv1alpha1.ConfigReference{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "cluster1", Name: "cfg"},
				LastObservedGeneration: 2, DesiredConfig: hash("cluster1", "cfg", "h1"), LastAppliedConfig: hash("cluster1", "cfg", "h0")}},
			Namespace: "addon-ns",
			Registrations: []addonv1alpha1.RegistrationConfig{
				{SignerName: kubeSigner, Subject: addonv1alpha1.Subject{User: "system:open-cluster-management:cluster:cluster1:addon:example:agent:example-agent",
					Groups: []string{"system:open-cluster-management:cluster:cluster1:addon:example", "system:open-cluster-management:addon:example"}}},
				{SignerName: "example.dev/signer", Subject: addonv1alpha1.Subject{User: "signed", Groups: []string{"g"}, OrganizationUnits: []string{"ou1"}}},
			},
			HealthCheck:      addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeCustomized},
			KubeClientDriver: "csr",
		},
	}
}

// cma is a v1alpha1 ClusterManagementAddOn with every field that maps to v1beta1 set.
func cma() *addonv1alpha1.ClusterManagementAddOn {
	adc := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}
	pr := addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"}
	return &addonv1alpha1.ClusterManagementAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ClusterManagementAddOn"},
		ObjectMeta: metav1.ObjectMeta{Name: "example", UID: "u2", Annotations: map[string]string{"addon.open-cluster-management.io/lifecycle": "addon-manager"}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1alpha1.AddOnMeta{DisplayName: "Example", Description: "an example"},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "cfg"}},
				{ConfigGroupResource: tmpl}, // no default
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef: pr,
				Configs:      []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "canary"}}},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
					MaxConcurrency: intstr.FromString("25%"), RolloutConfig: clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 60e9}}}},
			}}},
		},
		Status: addonv1alpha1.ClusterManagementAddOnStatus{
			DefaultConfigReferences: []addonv1alpha1.DefaultConfigReference{{ConfigGroupResource: adc, DesiredConfig: hash("default", "cfg", "h1")}},
			InstallProgressions: []addonv1alpha1.InstallProgression{{PlacementRef: pr,
				ConfigReferences: []addonv1alpha1.InstallConfigReference{{ConfigGroupResource: adc, DesiredConfig: hash("default", "canary", "h2"),
					LastKnownGoodConfig: hash("default", "canary", "h1"), LastAppliedConfig: hash("default", "canary", "h1")}},
				Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Progressing", LastTransitionTime: now}}}},
		},
	}
}

func TestManagedClusterAddOnToV1beta1(t *testing.T) {
	out := ManagedClusterAddOnToV1beta1(mca())
	assert.Equal(t, V1beta1, out.APIVersion)
	assert.Equal(t, map[string]string{"c": "d", InstallNamespaceAnnotation: "addon-ns"}, out.Annotations, "installNamespace rides in OCM's annotation")
	assert.Equal(t, "cfg", out.Spec.Configs[0].Name)
	require.Len(t, out.Status.Registrations, 2)
	kc := out.Status.Registrations[0]
	assert.Equal(t, addonv1beta1.KubeClient, kc.Type)
	require.NotNil(t, kc.KubeClient)
	assert.Equal(t, "csr", kc.KubeClient.Driver, "the status-level driver moves into the kubeClient registration")
	assert.Equal(t, "system:open-cluster-management:cluster:cluster1:addon:example:agent:example-agent", kc.KubeClient.Subject.User)
	assert.Len(t, kc.KubeClient.Subject.Groups, 2)
	cs := out.Status.Registrations[1]
	assert.Equal(t, addonv1beta1.CustomSigner, cs.Type)
	require.NotNil(t, cs.CustomSigner)
	assert.Equal(t, "example.dev/signer", cs.CustomSigner.SignerName)
	assert.Equal(t, []string{"ou1"}, cs.CustomSigner.Subject.OrganizationUnits)
	assert.Equal(t, "h1", out.Status.ConfigReferences[0].DesiredConfig.SpecHash)
	assert.Equal(t, addonv1beta1.HealthCheckModeCustomized, out.Status.HealthCheck.Mode)
	assert.Equal(t, map[string]string{"c": "d"}, mca().Annotations, "the input is not changed")
}

func TestClusterManagementAddOnToV1beta1(t *testing.T) {
	out := ClusterManagementAddOnToV1beta1(cma())
	require.Len(t, out.Spec.DefaultConfigs, 2)
	assert.Equal(t, addonv1beta1.ConfigReferent{Namespace: "default", Name: "cfg"}, out.Spec.DefaultConfigs[0].ConfigReferent)
	assert.Equal(t, NoDefaultConfigName, out.Spec.DefaultConfigs[1].Name, "a supported config without default keeps OCM's sentinel")
	assert.Equal(t, "25%", out.Spec.InstallStrategy.Placements[0].RolloutStrategy.Progressive.MaxConcurrency.String())
	assert.Equal(t, "h1", out.Status.DefaultConfigReferences[0].DesiredConfig.SpecHash)
	assert.Equal(t, "h1", out.Status.InstallProgressions[0].ConfigReferences[0].LastKnownGoodConfig.SpecHash)
}

// TestRoundTrip: a v1alpha1 object read at v1beta1 and written back is the same
// object, for every field that maps; the ones v1beta1 cannot carry are listed.
func TestRoundTrip(t *testing.T) {
	mcaCases := map[string]func(*addonv1alpha1.ManagedClusterAddOn){
		"every field": func(*addonv1alpha1.ManagedClusterAddOn) {},
		"empty": func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Spec, m.Status = addonv1alpha1.ManagedClusterAddOnSpec{}, addonv1alpha1.ManagedClusterAddOnStatus{}
		},
		"no installNamespace":   func(m *addonv1alpha1.ManagedClusterAddOn) { m.Spec.InstallNamespace = "" },
		"no annotations at all": func(m *addonv1alpha1.ManagedClusterAddOn) { m.Annotations = nil },
		"no desired config": func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences[0].DesiredConfig, m.Status.ConfigReferences[0].ConfigReferent = nil, addonv1alpha1.ConfigReferent{}
		},
		"custom signer only, no driver": func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Registrations, m.Status.KubeClientDriver = m.Status.Registrations[1:], ""
		},
	}
	for name, edit := range mcaCases {
		t.Run("ManagedClusterAddOn/"+name, func(t *testing.T) {
			in := mca()
			edit(in)
			assert.Equal(t, in, ManagedClusterAddOnToV1alpha1(ManagedClusterAddOnToV1beta1(in)))
		})
	}
	cmaCases := map[string]func(*addonv1alpha1.ClusterManagementAddOn){
		"every field": func(*addonv1alpha1.ClusterManagementAddOn) {},
		"empty": func(c *addonv1alpha1.ClusterManagementAddOn) {
			c.Spec, c.Status = addonv1alpha1.ClusterManagementAddOnSpec{}, addonv1alpha1.ClusterManagementAddOnStatus{}
		},
		"manual": func(c *addonv1alpha1.ClusterManagementAddOn) {
			c.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: "Manual"}
		},
	}
	for name, edit := range cmaCases {
		t.Run("ClusterManagementAddOn/"+name, func(t *testing.T) {
			in := cma()
			edit(in)
			assert.Equal(t, in, ClusterManagementAddOnToV1alpha1(ClusterManagementAddOnToV1beta1(in)))
		})
	}

	t.Run("what v1beta1 cannot carry", func(t *testing.T) {
		in := mca()
		in.Status.AddOnConfiguration = addonv1alpha1.ConfigCoordinates{CRDName: "x", CRName: "y"}
		in.Status.Registrations[0].Subject.OrganizationUnits = []string{"lost"}
		back := ManagedClusterAddOnToV1alpha1(ManagedClusterAddOnToV1beta1(in))
		assert.Empty(t, back.Status.AddOnConfiguration, "deprecated status.addOnConfiguration")
		assert.Empty(t, back.Status.Registrations[0].Subject.OrganizationUnits, "organizationUnit of a kube-apiserver-client subject")
		c := cma()
		c.Spec.AddOnConfiguration = addonv1alpha1.ConfigCoordinates{CRDName: "x"}
		assert.Empty(t, ClusterManagementAddOnToV1alpha1(ClusterManagementAddOnToV1beta1(c)).Spec.AddOnConfiguration, "deprecated spec.addOnConfiguration")
	})
}

// TestV1beta1RoundTrip: an object written at v1beta1, stored as v1alpha1 and read
// back at v1beta1, is the same.
func TestV1beta1RoundTrip(t *testing.T) {
	m := ManagedClusterAddOnToV1beta1(mca())
	assert.Equal(t, m, ManagedClusterAddOnToV1beta1(ManagedClusterAddOnToV1alpha1(m)))
	c := ClusterManagementAddOnToV1beta1(cma())
	assert.Equal(t, c, ClusterManagementAddOnToV1beta1(ClusterManagementAddOnToV1alpha1(c)))

	// A kubeClient registration without kubeClient is still a kube-apiserver-client one.
	bare := &addonv1beta1.ManagedClusterAddOn{Status: addonv1beta1.ManagedClusterAddOnStatus{Registrations: []addonv1beta1.RegistrationConfig{{Type: addonv1beta1.KubeClient}}}}
	assert.Equal(t, kubeSigner, ManagedClusterAddOnToV1alpha1(bare).Status.Registrations[0].SignerName)
	// An explicit empty defaultConfigs name means no default, as the sentinel does.
	noName := &addonv1beta1.ClusterManagementAddOn{Spec: addonv1beta1.ClusterManagementAddOnSpec{DefaultConfigs: []addonv1beta1.AddOnConfig{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "g", Resource: "r"}}}}}
	assert.Nil(t, ClusterManagementAddOnToV1alpha1(noName).Spec.SupportedConfigs[0].DefaultConfig)
}

// TestAgreesWithOCM: the mapping gives what OCM's own conversion (the functions
// generated in open-cluster-management.io/api, plus its webhook's installNamespace
// annotation and deprecated referent) gives, both ways.
func TestAgreesWithOCM(t *testing.T) {
	in := mca()
	want := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, addonv1beta1.Convert_v1alpha1_ManagedClusterAddOn_To_v1beta1_ManagedClusterAddOn(in.DeepCopy(), want, nil))
	want.TypeMeta = metav1.TypeMeta{APIVersion: V1beta1, Kind: "ManagedClusterAddOn"}
	want.Annotations[addonv1beta1.InstallNamespaceAnnotation] = in.Spec.InstallNamespace
	got := ManagedClusterAddOnToV1beta1(in)
	assert.Equal(t, want, got)

	back := &addonv1alpha1.ManagedClusterAddOn{}
	require.NoError(t, addonv1beta1.Convert_v1beta1_ManagedClusterAddOn_To_v1alpha1_ManagedClusterAddOn(got.DeepCopy(), back, nil))
	back.TypeMeta = metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ManagedClusterAddOn"}
	back.Spec.InstallNamespace = back.Annotations[addonv1beta1.InstallNamespaceAnnotation]
	delete(back.Annotations, addonv1beta1.InstallNamespaceAnnotation)
	for i := range back.Status.ConfigReferences {
		if d := back.Status.ConfigReferences[i].DesiredConfig; d != nil {
			back.Status.ConfigReferences[i].ConfigReferent = d.ConfigReferent
		}
	}
	assert.Equal(t, back, ManagedClusterAddOnToV1alpha1(got))

	c := cma()
	wantC := &addonv1beta1.ClusterManagementAddOn{}
	require.NoError(t, addonv1beta1.Convert_v1alpha1_ClusterManagementAddOn_To_v1beta1_ClusterManagementAddOn(c.DeepCopy(), wantC, nil))
	wantC.TypeMeta = metav1.TypeMeta{APIVersion: V1beta1, Kind: "ClusterManagementAddOn"}
	gotC := ClusterManagementAddOnToV1beta1(c)
	assert.Equal(t, wantC, gotC)
	backC := &addonv1alpha1.ClusterManagementAddOn{}
	require.NoError(t, addonv1beta1.Convert_v1beta1_ClusterManagementAddOn_To_v1alpha1_ClusterManagementAddOn(gotC.DeepCopy(), backC, nil))
	backC.TypeMeta = metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ClusterManagementAddOn"}
	assert.Equal(t, backC, ClusterManagementAddOnToV1alpha1(gotC))
}
