package work

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ReplicaSetWebhookPath is where the ManifestWorkReplicaSet validating webhook
// is served.
const ReplicaSetWebhookPath = "/validate-manifestworkreplicaset"

// replicaSetWebhook is the ManifestWorkReplicaSet entry of Webhooks.
func replicaSetWebhook() admissionregistrationv1.ValidatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	return admissionregistrationv1.ValidatingWebhook{
		Name:         "manifestworkreplicasetvalidators.admission.work.open-cluster-management.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(ReplicaSetWebhookPath)},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{workv1.GroupName},
				APIVersions: []string{"v1alpha1"},
				Resources:   []string{"manifestworkreplicasets"},
			},
		}},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](10),
	}
}

// replicaSetValidator admits ManifestWorkReplicaSets whose template would make
// valid works, and whose author may use the template's executor.
//
// The hub writes the works of a replica set with its own identity, so the
// ManifestWork webhook would only ever see the hub ask. The author is checked
// here instead, in the replica set's namespace: a grant of execute-as there
// (the namespace an admin binds cluster sets to, so the one that decides
// which clusters its replica sets reach) lets its replica sets use that
// executor on the clusters they select. OCM's replica set webhook checks only
// the manifests.
type replicaSetValidator struct {
	decoder admission.Decoder
	sar     client.Client
	limit   int
	nilExec bool
}

func (v *replicaSetValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := v.decoder.Decode(req, rs); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the ManifestWorkReplicaSet: %w", err))
	}
	if rs.DeletionTimestamp != nil {
		return admission.Allowed("")
	}
	templateSame := false
	if req.Operation == admissionv1.Update {
		old := &workv1alpha1.ManifestWorkReplicaSet{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the stored ManifestWorkReplicaSet: %w", err))
		}
		// Status, finalizer and label writes (the controller's) pass.
		if equality.Semantic.DeepEqual(old.Spec, rs.Spec) {
			return admission.Allowed("")
		}
		templateSame = equality.Semantic.DeepEqual(old.Spec.ManifestWorkTemplate.Workload, rs.Spec.ManifestWorkTemplate.Workload)
	}
	// Every spec change is judged: new placement refs take the executor to
	// more clusters, new manifests give it new things to do.
	msg, err := CheckExecutor(ctx, v.sar, ExecutorCheck{User: req.UserInfo, Namespace: req.Namespace,
		Field: "spec.manifestWorkTemplate.executor", Executor: rs.Spec.ManifestWorkTemplate.Executor, NilExecutorValidating: v.nilExec})
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("cannot check the executor: %w", err))
	}
	if msg != "" {
		return admission.Denied(fmt.Sprintf("ManifestWorkReplicaSet %s/%s: %s", req.Namespace, rs.Name, msg))
	}
	if templateSame {
		return admission.Allowed("")
	}
	w := &workv1.ManifestWork{Spec: rs.Spec.ManifestWorkTemplate}
	if problems := Validate(w, v.limit); len(problems) > 0 {
		if len(problems) > maxProblems {
			problems = append(problems[:maxProblems], fmt.Sprintf("and %d more problems", len(problems)-maxProblems))
		}
		return admission.Denied(fmt.Sprintf("ManifestWorkReplicaSet %s/%s is invalid: spec.manifestWorkTemplate.workload.manifests: %s",
			req.Namespace, rs.Name, strings.Join(problems, "; ")))
	}
	return admission.Allowed("")
}
