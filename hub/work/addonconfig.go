package work

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/internal/ocm"
)

// AddonWebhookPath is where the ManagedClusterAddOn check of
// Options.NilExecutorValidating is served.
const AddonWebhookPath = "/validate-managedclusteraddon-executor"

// addonWebhook is the ManagedClusterAddOn entry of Webhooks. The apiserver
// sends v1beta1 writes converted to v1alpha1 (matchPolicy Equivalent).
func addonWebhook() admissionregistrationv1.ValidatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	return admissionregistrationv1.ValidatingWebhook{
		Name:         "managedclusteraddonexecutor.admission.work.open-cluster-management.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(AddonWebhookPath)},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{addonv1alpha1.GroupName},
				APIVersions: []string{"v1alpha1"},
				Resources:   []string{"managedclusteraddons"},
			},
		}},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](10),
	}
}

// addonValidator closes a way around Options.NilExecutorValidating: the hub
// writes an addon's works with its own identity, and a ManagedClusterAddOn's
// spec.configs (an AddOnDeploymentConfig in any namespace: registries,
// customizedVariables, nodePlacement, agentInstallNamespace) and
// spec.installNamespace choose what the addon's agent runs, and where, with
// the agent's rights on the cluster. With the option on, whoever sets them
// needs what a work without executor needs: execute-as on
// DefaultExecutorName in the cluster namespace. Off, everything passes (a
// writer of the cluster namespace may write works as the agent anyway).
type addonValidator struct {
	decoder admission.Decoder
	sar     client.Client
	nilExec bool
}

func (v *addonValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if !v.nilExec || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed("")
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := v.decoder.Decode(req, mca); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the ManagedClusterAddOn: %w", err))
	}
	if mca.DeletionTimestamp != nil {
		return admission.Allowed("")
	}
	var old addonv1alpha1.ManagedClusterAddOnSpec
	if req.Operation == admissionv1.Update {
		o := &addonv1alpha1.ManagedClusterAddOn{}
		if err := v.decoder.DecodeRaw(req.OldObject, o); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the stored ManagedClusterAddOn: %w", err))
		}
		old = o.Spec
	}
	field := ""
	switch {
	case !equality.Semantic.DeepEqual(old.Configs, mca.Spec.Configs) && len(mca.Spec.Configs) > 0:
		field = "spec.configs"
	case old.InstallNamespace != mca.Spec.InstallNamespace && !defaultInstallNamespace(mca.Spec.InstallNamespace):
		field = "spec.installNamespace"
	default:
		// Enabling with the hub's defaults, dropping configs, or going back to
		// the default install namespace passes.
		return admission.Allowed("")
	}
	msg, err := CheckExecutor(ctx, v.sar, ExecutorCheck{User: req.UserInfo, Namespace: req.Namespace, Field: field, NilExecutorValidating: true,
		Reason: field + " chooses what the addon's agent runs on the cluster, and the hub validates unset executors"})
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("cannot check the executor: %w", err))
	}
	if msg != "" {
		return admission.Denied(fmt.Sprintf("ManagedClusterAddOn %s/%s: %s", req.Namespace, mca.Name, msg))
	}
	return admission.Allowed("")
}

// defaultInstallNamespace says whether ns leaves the install namespace to the
// hub: unset, or the CRD's default that the apiserver fills in.
func defaultInstallNamespace(ns string) bool {
	return ns == "" || ns == ocm.DefaultAddonInstallNamespace
}
