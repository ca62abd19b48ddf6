package workreplicaset

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// TestPolicyWebhookChecksDeletingPolicies: a policy held by a finalizer while
// it is deleted is still rendered with, so a spec change to it is checked
// like any other (it once passed unchecked).
func TestPolicyWebhookChecksDeletingPolicies(t *testing.T) {
	now := metav1.Now()
	raw := func(p distv1alpha1.DistributionPolicy) runtime.RawExtension {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	old := distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps", DeletionTimestamp: &now, Finalizers: []string{"x"}}}
	bad := *old.DeepCopy()
	bad.Spec.Overrides = []distv1alpha1.OverrideRule{{Name: "r", Annotations: []distv1alpha1.MetadataOverride{{Key: "a", Value: "{{ cluster.nope }}"}}}}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: "apps",
		Object: raw(bad), OldObject: raw(old)}}
	resp := PolicyValidator{}.Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.overrides[0].annotations[0].value")

	// Its finalizers may still go without a check.
	done := *bad.DeepCopy()
	done.Finalizers = nil
	req = admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: "apps",
		Object: raw(done), OldObject: raw(bad)}}
	assert.True(t, PolicyValidator{}.Handle(context.Background(), req).Allowed)
}
