package admission

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
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

// maxProblem caps each problem in a refusal, in bytes.
const maxProblem = 1024

// WebhookPath is where the Placement admission handler is served.
const WebhookPath = "/validate-placement"

// Webhook is the ValidatingWebhook for Placements; ClientConfig.URL holds only
// the path, the hub fills in its base URL and CA bundle. It fails closed.
func Webhook() admissionregistrationv1.ValidatingWebhook {
	path := WebhookPath
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := int32(10)
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "placements.cluster.flotilla.dev",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &path},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{clusterv1beta1.GroupName},
				APIVersions: []string{"v1beta1"},
				Resources:   []string{"placements"},
			},
		}},
	}
}

// Validator refuses Placements that Registry.Validate finds fault with.
type Validator struct {
	// Registry knows the selectors and prioritizers. Default
	// scheduling.DefaultRegistry().
	Registry *scheduling.Registry
}

var _ admission.Handler = &Validator{}

// Handle implements admission.Handler.
func (v *Validator) Handle(_ context.Context, req admission.Request) admission.Response {
	cur, err := specOf(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("read Placement: %w", err))
	}
	if cur.Metadata.DeletionTimestamp != nil {
		return admission.Allowed("")
	}
	if req.Operation == admissionv1.Update {
		// Writes that leave the spec alone (labels, finalizers) pass, so a
		// Placement stored before this check can still be managed.
		if old, err := specOf(req.OldObject.Raw); err == nil && reflect.DeepEqual(old.Spec, cur.Spec) {
			return admission.Allowed("")
		}
	}
	var p clusterv1beta1.Placement
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		// A value the Go types cannot hold (numberOfClusters over int32) is
		// the ValidatingAdmissionPolicy's to refuse (it holds without a hub);
		// this check has nothing to add.
		return admission.Allowed("").WithWarnings(fmt.Sprintf("the hub cannot read this Placement's spec: %v", err))
	}
	r := v.Registry
	if r == nil {
		r = scheduling.DefaultRegistry()
	}
	problems := r.Validate(&p)
	if len(problems) == 0 {
		return admission.Allowed("")
	}
	for i, pr := range problems {
		// A problem may quote a huge expression or value.
		if len(pr) > maxProblem {
			problems[i] = pr[:maxProblem] + fmt.Sprintf("... [truncated: %d of %d bytes]", maxProblem, len(pr))
		}
	}
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more problems", len(problems)-10))
	}
	return invalid(fmt.Sprintf("Placement %s/%s is invalid: %s", req.Namespace, p.Name, strings.Join(problems, "; ")))
}

// loose is what the check reads of any Placement, even one its Go type
// cannot hold.
type loose struct {
	Metadata struct {
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	} `json:"metadata"`
	Spec map[string]interface{} `json:"spec"`
}

func specOf(raw []byte) (loose, error) {
	var l loose
	err := json.Unmarshal(raw, &l)
	return l, err
}

// invalid refuses with 422 Invalid, as the apiserver's own validation does.
func invalid(msg string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: msg},
	}}
}
