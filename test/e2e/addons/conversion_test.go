package addons_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"flotilla.dev/flotilla/hub/addonconversion"
)

const conversionNS = "addon-conversion"

func addonClients(t *testing.T) *addonclient.Clientset {
	t.Helper()
	cs, err := addonclient.NewForConfig(env.Hub.Config)
	require.NoError(t, err)
	_, err = kubernetes.NewForConfigOrDie(env.Hub.Config).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: conversionNS}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return cs
}

// clearServerFields leaves out what the apiserver changes on every write.
func clearServerFields(m *metav1.ObjectMeta) {
	m.ManagedFields, m.ResourceVersion, m.Generation = nil, "", 0
}

// TestAddonConversionRoundTrip: a ManagedClusterAddOn or ClusterManagementAddOn
// created at v1alpha1 reads at v1beta1 as the mapping says (hub/addonconversion),
// and written back unchanged at v1beta1 it reads at v1alpha1 as it was created,
// for every field that maps.
func TestAddonConversionRoundTrip(t *testing.T) {
	ctx := context.Background()
	cs := addonClients(t)
	adc := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	hash := func(name, h string) *addonv1alpha1.ConfigSpecHash {
		return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: conversionNS, Name: name}, SpecHash: h}
	}
	now := metav1.Now().Rfc3339Copy()

	mcas := []struct {
		name   string
		spec   addonv1alpha1.ManagedClusterAddOnSpec
		status addonv1alpha1.ManagedClusterAddOnStatus
		check  func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn)
	}{
		{name: "install-namespace", spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "agents"},
			check: func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn) {
				assert.Equal(t, "agents", b.Annotations[addonconversion.InstallNamespaceAnnotation])
			}},
		{name: "configs", spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: conversionNS, Name: "cfg"}}}},
			check: func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn) {
				require.Len(t, b.Spec.Configs, 1)
				assert.Equal(t, "cfg", b.Spec.Configs[0].Name)
			}},
		{name: "kube-client-registration", status: addonv1alpha1.ManagedClusterAddOnStatus{KubeClientDriver: "csr",
			Registrations: []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: "u", Groups: []string{"g1", "g2"}}}}},
			check: func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn) {
				require.Len(t, b.Status.Registrations, 1)
				r := b.Status.Registrations[0]
				assert.Equal(t, addonv1beta1.KubeClient, r.Type)
				require.NotNil(t, r.KubeClient)
				assert.Equal(t, "u", r.KubeClient.Subject.User)
				assert.Equal(t, []string{"g1", "g2"}, r.KubeClient.Subject.Groups)
				assert.Equal(t, "csr", r.KubeClient.Driver)
			}},
		{name: "custom-signer-registration", status: addonv1alpha1.ManagedClusterAddOnStatus{
			Registrations: []addonv1alpha1.RegistrationConfig{{SignerName: "example.dev/signer", Subject: addonv1alpha1.Subject{User: "u", Groups: []string{"g"}, OrganizationUnits: []string{"ou"}}}}},
			check: func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn) {
				r := b.Status.Registrations[0]
				assert.Equal(t, addonv1beta1.CustomSigner, r.Type)
				require.NotNil(t, r.CustomSigner)
				assert.Equal(t, "example.dev/signer", r.CustomSigner.SignerName)
				assert.Equal(t, []string{"ou"}, r.CustomSigner.Subject.OrganizationUnits)
			}},
		{name: "status", status: addonv1alpha1.ManagedClusterAddOnStatus{
			Conditions:       []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "ProbeAvailable", Message: "ok", LastTransitionTime: now}},
			RelatedObjects:   []addonv1alpha1.ObjectReference{{Group: "addon.open-cluster-management.io", Resource: "clustermanagementaddons", Name: "x"}},
			AddOnMeta:        addonv1alpha1.AddOnMeta{DisplayName: "X", Description: "x"},
			SupportedConfigs: []addonv1alpha1.ConfigGroupResource{adc},
			ConfigReferences: []addonv1alpha1.ConfigReference{{ConfigGroupResource: adc, ConfigReferent: hash("cfg", "").ConfigReferent,
				LastObservedGeneration: 4, DesiredConfig: hash("cfg", "h2"), LastAppliedConfig: hash("cfg", "h1")}},
			Namespace:   "agents",
			HealthCheck: addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeCustomized}},
			check: func(t *testing.T, b *addonv1beta1.ManagedClusterAddOn) {
				assert.Equal(t, "h2", b.Status.ConfigReferences[0].DesiredConfig.SpecHash)
				assert.Equal(t, int64(4), b.Status.ConfigReferences[0].LastObservedGeneration)
				assert.Equal(t, "agents", b.Status.Namespace)
				assert.Equal(t, addonv1beta1.HealthCheckModeCustomized, b.Status.HealthCheck.Mode)
				assert.Equal(t, "ProbeAvailable", b.Status.Conditions[0].Reason)
			}},
	}
	for _, tt := range mcas {
		t.Run("ManagedClusterAddOn/"+tt.name, func(t *testing.T) {
			a := cs.AddonV1alpha1().ManagedClusterAddOns(conversionNS)
			b := cs.AddonV1beta1().ManagedClusterAddOns(conversionNS)
			created, err := a.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "conv-" + tt.name, Labels: map[string]string{"k": "v"}}, Spec: tt.spec}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Delete(ctx, created.Name, metav1.DeleteOptions{}) })
			created.Status = tt.status
			stored, err := a.UpdateStatus(ctx, created, metav1.UpdateOptions{})
			require.NoError(t, err)

			beta, err := b.Get(ctx, stored.Name, metav1.GetOptions{})
			require.NoError(t, err, "read at v1beta1")
			tt.check(t, beta)
			want := addonconversion.ManagedClusterAddOnToV1beta1(stored)
			want.TypeMeta, beta.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			assert.Equal(t, want, beta, "the apiserver's v1beta1 view is the mapping of the stored object")

			// Written back at v1beta1 (spec, then status), it reads as created.
			beta, err = b.Update(ctx, beta, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, err = b.UpdateStatus(ctx, beta, metav1.UpdateOptions{})
			require.NoError(t, err)
			back, err := a.Get(ctx, stored.Name, metav1.GetOptions{})
			require.NoError(t, err)
			clearServerFields(&back.ObjectMeta)
			clearServerFields(&stored.ObjectMeta)
			back.TypeMeta, stored.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			assert.Equal(t, stored, back, "v1alpha1 -> v1beta1 -> v1alpha1 keeps every field that maps")
		})
	}

	pr := addonv1alpha1.PlacementRef{Namespace: conversionNS, Name: "all"}
	cmas := []struct {
		name   string
		spec   addonv1alpha1.ClusterManagementAddOnSpec
		status addonv1alpha1.ClusterManagementAddOnStatus
		check  func(t *testing.T, b *addonv1beta1.ClusterManagementAddOn)
	}{
		{name: "supported-configs", spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta:       addonv1alpha1.AddOnMeta{DisplayName: "C", Description: "c"},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: "Manual"},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: conversionNS, Name: "cfg"}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}}}},
			check: func(t *testing.T, b *addonv1beta1.ClusterManagementAddOn) {
				require.Len(t, b.Spec.DefaultConfigs, 2)
				assert.Equal(t, "cfg", b.Spec.DefaultConfigs[0].Name)
				assert.Equal(t, addonconversion.NoDefaultConfigName, b.Spec.DefaultConfigs[1].Name)
			}},
		{name: "placements", spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: "Manual", Placements: []addonv1alpha1.PlacementStrategy{{
			PlacementRef: pr, Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: conversionNS, Name: "canary"}}},
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromString("50%")}}}}}},
			status: addonv1alpha1.ClusterManagementAddOnStatus{
				DefaultConfigReferences: []addonv1alpha1.DefaultConfigReference{{ConfigGroupResource: adc, DesiredConfig: hash("cfg", "h1")}},
				InstallProgressions: []addonv1alpha1.InstallProgression{{PlacementRef: pr,
					ConfigReferences: []addonv1alpha1.InstallConfigReference{{ConfigGroupResource: adc, DesiredConfig: hash("canary", "h2"), LastKnownGoodConfig: hash("canary", "h1"), LastAppliedConfig: hash("canary", "h1")}},
					Conditions:       []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Completed", Message: "done", LastTransitionTime: now}}}}},
			check: func(t *testing.T, b *addonv1beta1.ClusterManagementAddOn) {
				assert.Equal(t, "50%", b.Spec.InstallStrategy.Placements[0].RolloutStrategy.Progressive.MaxConcurrency.String())
				assert.Equal(t, "h1", b.Status.DefaultConfigReferences[0].DesiredConfig.SpecHash)
				assert.Equal(t, "h1", b.Status.InstallProgressions[0].ConfigReferences[0].LastKnownGoodConfig.SpecHash)
			}},
	}
	for _, tt := range cmas {
		t.Run("ClusterManagementAddOn/"+tt.name, func(t *testing.T) {
			a := cs.AddonV1alpha1().ClusterManagementAddOns()
			b := cs.AddonV1beta1().ClusterManagementAddOns()
			// Self-managed: Flotilla's install controller (which plans Manual
			// addons too, and writes their status) leaves these objects alone.
			created, err := a.Create(ctx, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "conv-" + tt.name,
				Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
				Spec: tt.spec}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Delete(ctx, created.Name, metav1.DeleteOptions{}) })
			created.Status = tt.status
			stored, err := a.UpdateStatus(ctx, created, metav1.UpdateOptions{})
			require.NoError(t, err)

			beta, err := b.Get(ctx, stored.Name, metav1.GetOptions{})
			require.NoError(t, err, "read at v1beta1")
			tt.check(t, beta)
			want := addonconversion.ClusterManagementAddOnToV1beta1(stored)
			want.TypeMeta, beta.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			assert.Equal(t, want, beta, "the apiserver's v1beta1 view is the mapping of the stored object")

			beta, err = b.Update(ctx, beta, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, err = b.UpdateStatus(ctx, beta, metav1.UpdateOptions{})
			require.NoError(t, err)
			back, err := a.Get(ctx, stored.Name, metav1.GetOptions{})
			require.NoError(t, err)
			clearServerFields(&back.ObjectMeta)
			clearServerFields(&stored.ObjectMeta)
			back.TypeMeta, stored.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			assert.Equal(t, stored, back, "v1alpha1 -> v1beta1 -> v1alpha1 keeps every field that maps")
		})
	}
}

// TestAddonV1beta1ListWatch: a v1beta1 client (what upstream's agents and addon
// controllers use) lists and watches ManagedClusterAddOns written at v1alpha1,
// and one it writes at v1beta1 is read at v1alpha1 with its install namespace.
func TestAddonV1beta1ListWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cs := addonClients(t)
	a := cs.AddonV1alpha1().ManagedClusterAddOns(conversionNS)
	b := cs.AddonV1beta1().ManagedClusterAddOns(conversionNS)

	list, err := cs.AddonV1beta1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "list at v1beta1 in every namespace")
	w, err := b.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err, "watch at v1beta1")
	defer w.Stop()

	_, err = a.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "agents"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Delete(context.Background(), "watched", metav1.DeleteOptions{}) })
	for ev := range w.ResultChan() {
		require.NotEqual(t, watch.Error, ev.Type, "watch error: %v", ev.Object)
		m, ok := ev.Object.(*addonv1beta1.ManagedClusterAddOn)
		require.True(t, ok, "a v1beta1 object: %T", ev.Object)
		if m.Name != "watched" {
			continue
		}
		assert.Equal(t, watch.Added, ev.Type)
		assert.Equal(t, "agents", m.Annotations[addonconversion.InstallNamespaceAnnotation])
		break
	}
	require.NoError(t, ctx.Err(), "the v1beta1 watch never saw the object")

	list, err = b.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, m := range list.Items {
		names = append(names, m.Name)
	}
	assert.Contains(t, names, "watched")

	// Written at v1beta1, read at v1alpha1.
	_, err = b.Create(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "beta-written",
		Annotations: map[string]string{addonconversion.InstallNamespaceAnnotation: "beta-agents"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Delete(context.Background(), "beta-written", metav1.DeleteOptions{}) })
	got, err := a.Get(ctx, "beta-written", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "beta-agents", got.Spec.InstallNamespace)
	assert.NotContains(t, got.Annotations, addonconversion.InstallNamespaceAnnotation, "the annotation is v1beta1's place for the field only")
}

// TestAddonEnabledAtV1beta1: an addon enabled by a v1beta1 client (as upstream
// clusteradm and controllers do) is deployed by Flotilla's addon manager into
// the install namespace the v1beta1 annotation names.
func TestAddonEnabledAtV1beta1(t *testing.T) {
	ctx := context.Background()
	cs := addonClients(t)
	const cluster, name = "cluster2", "versioned"
	_, err := cs.AddonV1beta1().ManagedClusterAddOns(cluster).Create(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{addonconversion.InstallNamespaceAnnotation: "versioned-agents"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, cluster, name) })

	eventuallyCondition(t, cluster, name, addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue)
	m, err := getAddon(cluster, name)
	require.NoError(t, err)
	assert.Equal(t, "versioned-agents", m.Spec.InstallNamespace)
	assert.Equal(t, "versioned-agents", m.Status.Namespace)
	beta, err := cs.AddonV1beta1().ManagedClusterAddOns(cluster).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "versioned-agents", beta.Status.Namespace, "status written by the manager at v1alpha1 reads at v1beta1")
	_, err = spoke(1).CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	assert.NoError(t, err, "the addon's manifest is on the managed cluster")
}
