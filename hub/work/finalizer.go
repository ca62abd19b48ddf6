package work

import (
	"context"
	"encoding/json"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// FinalizerPath is where the ManifestWork mutating webhook is served.
const FinalizerPath = "/mutate-manifestwork"

// MutatingWebhooks are the mutating webhooks this package serves (the URL
// holds only the path, as in Webhooks). The one on ManifestWork CREATE puts
// the work agent's finalizer (cluster.open-cluster-management.io/
// manifest-work-cleanup) on every new work. The agent would add it itself, on
// the hub, while it applies; holding it from the start lets the agent write a
// new work's record and resources at once, two round trips before the hub
// hears of the apply instead of three (docs/work.md, "The critical path of a
// new work"), since a work deleted meanwhile waits for the agent. Failure
// policy Ignore: without the webhook a work is created as in OCM and the agent
// takes the longer way. A work the agent never took up is let go by the hub
// when its cluster is not available (releaser).
func MutatingWebhooks() []admissionregistrationv1.MutatingWebhook {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	never := admissionregistrationv1.NeverReinvocationPolicy
	return []admissionregistrationv1.MutatingWebhook{{
		Name:         "manifestworkfinalizers.admission.work.flotilla.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(FinalizerPath)},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{workv1.GroupName}, APIVersions: []string{"v1"}, Resources: []string{"manifestworks"},
			},
		}},
		FailurePolicy:           &ignore,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		ReinvocationPolicy:      &never,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](5),
	}}
}

// finalizerAdder is the webhook at FinalizerPath.
type finalizerAdder struct{}

// FinalizerHandler is the handler served at FinalizerPath (Setup registers
// it; a benchmark that runs the work agent without the hub serves it alone).
func FinalizerHandler() admission.Handler { return finalizerAdder{} }

func (finalizerAdder) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	patch, ok := FinalizerPatch(req.Object.Raw)
	if !ok {
		return admission.Allowed("")
	}
	return admission.Patched("", patch)
}

// FinalizerPatch is the JSON patch operation that adds the work agent's
// finalizer to raw, a ManifestWork; ok is false when it holds it already, or
// cannot be read (validation then speaks).
func FinalizerPatch(raw []byte) (op jsonpatch.Operation, ok bool) {
	var partial struct {
		Metadata struct {
			Finalizers []string `json:"finalizers"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &partial); err != nil {
		return op, false
	}
	switch {
	case slices.Contains(partial.Metadata.Finalizers, workv1.ManifestWorkFinalizer):
		return op, false
	case len(partial.Metadata.Finalizers) == 0:
		return jsonpatch.NewOperation("add", "/metadata/finalizers", []string{workv1.ManifestWorkFinalizer}), true
	default:
		return jsonpatch.NewOperation("add", "/metadata/finalizers/-", workv1.ManifestWorkFinalizer), true
	}
}
