package workreplicaset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
)

// PolicyWebhookPath is where the DistributionPolicy admission handler is served.
const PolicyWebhookPath = "/validate-distributionpolicy"

// PolicyWebhook is the ValidatingWebhook for DistributionPolicies (create,
// and updates that change the spec); ClientConfig.URL holds only the path,
// the hub fills in its base URL and CA bundle. It fails closed.
func PolicyWebhook() admissionregistrationv1.ValidatingWebhook {
	path := PolicyWebhookPath
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := int32(10)
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "distributionpolicies.flotilla.dev",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &path},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{distv1alpha1.GroupName},
				APIVersions: []string{distv1alpha1.GroupVersion.Version},
				Resources:   []string{"distributionpolicies"},
			},
		}},
	}
}

// PolicyValidator refuses DistributionPolicies that distribute.Validate finds
// fault with: what the CRD schema cannot judge (selectors, templates, image
// components and label values without templates, patch values).
type PolicyValidator struct{}

var _ admission.Handler = PolicyValidator{}

// Handle implements admission.Handler.
func (PolicyValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	var p distv1alpha1.DistributionPolicy
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("read DistributionPolicy: %w", err))
	}
	// No pass for an object being deleted: one held by a finalizer can still
	// have its spec changed, and the controller renders with it until it goes.
	if req.Operation == admissionv1.Update {
		var old distv1alpha1.DistributionPolicy
		if err := json.Unmarshal(req.OldObject.Raw, &old); err == nil && reflect.DeepEqual(old.Spec, p.Spec) {
			return admission.Allowed("") // status, labels, finalizers
		}
	}
	problems := distribute.Validate(p.Spec)
	if len(problems) == 0 {
		return admission.Allowed("")
	}
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more problems", len(problems)-10))
	}
	msg := fmt.Sprintf("DistributionPolicy %s/%s is invalid: %s", req.Namespace, p.Name, strings.Join(problems, "; "))
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: msg},
	}}
}
