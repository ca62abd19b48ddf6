package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestDesiredConfigs(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}
	other := addonv1alpha1.ConfigGroupResource{Group: "example.com", Resource: "things"}
	cfg := func(gr addonv1alpha1.ConfigGroupResource, name string) addonv1alpha1.AddOnConfig {
		return addonv1alpha1.AddOnConfig{ConfigGroupResource: gr, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: name}}
	}
	supported := []addonv1alpha1.ConfigMeta{
		{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "default"}},
		{ConfigGroupResource: tmpl, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "t1"}},
		{ConfigGroupResource: other},
	}
	names := func(cs []addonv1alpha1.AddOnConfig) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Resource+"/"+c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		placement, own []addonv1alpha1.AddOnConfig
		want           []string
	}{
		{"defaults only", nil, nil, []string{"addondeploymentconfigs/default", "addontemplates/t1"}},
		{"placement overrides its type", []addonv1alpha1.AddOnConfig{cfg(adc, "team")}, nil, []string{"addondeploymentconfigs/team", "addontemplates/t1"}},
		{"the addon's own override both", []addonv1alpha1.AddOnConfig{cfg(adc, "team")}, []addonv1alpha1.AddOnConfig{cfg(adc, "mine")},
			[]string{"addondeploymentconfigs/mine", "addontemplates/t1"}},
		{"a type with no default", nil, []addonv1alpha1.AddOnConfig{cfg(other, "x")}, []string{"addondeploymentconfigs/default", "addontemplates/t1", "things/x"}},
		{"last of a type wins", []addonv1alpha1.AddOnConfig{cfg(tmpl, "t2"), cfg(tmpl, "t3")}, nil, []string{"addondeploymentconfigs/default", "addontemplates/t3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, names(DesiredConfigs(supported, tc.placement, tc.own)))
		})
	}
}

func TestSpecHash(t *testing.T) {
	a := &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 3},
		Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "x"}}
	b := a.DeepCopy()
	b.Name, b.Generation = "b", 9
	ha, err := SpecHash(a)
	require.NoError(t, err)
	hb, _ := SpecHash(b)
	assert.Equal(t, ha, hb, "only the spec counts")
	assert.Len(t, ha, 64)
	// sha256 of {"agentInstallNamespace":"x"}: the stored spec's JSON, empty fields left out.
	assert.Equal(t, "7c39aa31d0d154fa3fbd64ede034cc211fb001e9b444b9fa82cd61cc7afba336", ha)
	b.Spec.CustomizedVariables = []addonv1alpha1.CustomizedVariable{{Name: "k", Value: "v"}}
	hb, _ = SpecHash(b)
	assert.NotEqual(t, ha, hb)
	assert.Equal(t, "addondeploymentconfigs.addon.open-cluster-management.io/ns/n",
		ConfigKey(addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}, addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "n"}))
}
