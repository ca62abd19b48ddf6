package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestSpec(t *testing.T) {
	ms := []workv1.Manifest{
		{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app"}}`)}},
		{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","namespace":"app"}}`)}},
		{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"app"}}`)}},
	}
	t.Run("nothing set", func(t *testing.T) {
		s, err := Spec(ms, SpecOptions{})
		require.NoError(t, err)
		assert.Nil(t, s.Executor)
		assert.Nil(t, s.DeleteOption)
		assert.Empty(t, s.ManifestConfigs)
	})
	t.Run("executor, ttl, ignore fields, well-known conditions", func(t *testing.T) {
		s, err := Spec(ms, SpecOptions{Executor: "app/deployer", TTLAfterFinished: ptr.To[int64](300), WellKnownConditions: true,
			IgnoreFields: []string{".spec.replicas", "/metadata/annotations/x:OnSpokeChange"}})
		require.NoError(t, err)
		assert.Equal(t, "deployer", s.Executor.Subject.ServiceAccount.Name)
		assert.Equal(t, ptr.To[int64](300), s.DeleteOption.TTLSecondsAfterFinished)
		require.Len(t, s.ManifestConfigs, 3)
		dep := s.ManifestConfigs[0]
		assert.Equal(t, workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "app", Name: "web"}, dep.ResourceIdentifier)
		assert.Equal(t, workv1.UpdateStrategyTypeServerSideApply, dep.UpdateStrategy.Type)
		assert.Equal(t, []workv1.IgnoreField{
			{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".spec.replicas"}},
			{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPointers: []string{"/metadata/annotations/x"}},
		}, dep.UpdateStrategy.ServerSideApply.IgnoreFields)
		assert.Equal(t, []workv1.ConditionRule{{Type: workv1.WellKnownConditionsType, Condition: "Degraded"}, {Type: workv1.WellKnownConditionsType, Condition: "Progressing"}}, dep.ConditionRules)
		assert.Equal(t, "jobs", s.ManifestConfigs[1].ResourceIdentifier.Resource)
		assert.Equal(t, []workv1.ConditionRule{{Type: workv1.WellKnownConditionsType, Condition: "Complete"}, {Type: workv1.WellKnownConditionsType, Condition: "Degraded"}}, s.ManifestConfigs[1].ConditionRules)
		assert.Empty(t, s.ManifestConfigs[2].ConditionRules, "no built-in rule for a ConfigMap")
	})
	for _, tc := range []struct {
		name string
		opts SpecOptions
		want string
	}{
		{"executor without a namespace", SpecOptions{Executor: "deployer"}, `--executor "deployer": want NAMESPACE/NAME`},
		{"negative ttl", SpecOptions{TTLAfterFinished: ptr.To[int64](-1)}, "--ttl-after-finished -1 must not be negative"},
		{"unknown strategy", SpecOptions{UpdateStrategy: "Replace"}, `--update-strategy "Replace"`},
		{"ignore fields with Update", SpecOptions{UpdateStrategy: "Update", IgnoreFields: []string{".spec.replicas"}}, "--ignore-field needs --update-strategy ServerSideApply"},
		{"not a path", SpecOptions{IgnoreFields: []string{"spec.replicas"}}, `--ignore-field "spec.replicas": want a JSON pointer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Spec(ms, tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
