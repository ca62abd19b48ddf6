package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// WebhookPath is where the binding admission handler is served.
const WebhookPath = "/validate-managedclustersetbinding"

// Webhook is the ValidatingWebhook for bindings; ClientConfig.URL holds only the
// path, the hub fills in its base URL and CA bundle.
func Webhook() admissionregistrationv1.ValidatingWebhook {
	path := WebhookPath
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "managedclustersetbindings.cluster.flotilla.dev",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &path},
		FailurePolicy:           &fail,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{clusterv1beta2.GroupName},
				APIVersions: []string{"*"},
				Resources:   []string{"managedclustersetbindings"},
			},
		}},
	}
}

// Validator admits a ManagedClusterSetBinding only when it is named after its set
// and the requester may create managedclustersets/bind on that set.
type Validator struct {
	// Client creates SubjectAccessReviews.
	Client client.Client
}

var _ admission.Handler = &Validator{}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var b clusterv1beta2.ManagedClusterSetBinding
	if err := json.Unmarshal(req.Object.Raw, &b); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode ManagedClusterSetBinding: %w", err))
	}
	if req.Operation == admissionv1.Update {
		var old clusterv1beta2.ManagedClusterSetBinding
		if err := json.Unmarshal(req.OldObject.Raw, &old); err == nil && old.Spec.ClusterSet == b.Spec.ClusterSet {
			return admission.Allowed("")
		}
	}
	if b.Spec.ClusterSet == "" {
		return admission.Denied("spec.clusterSet is required: name the ManagedClusterSet to bind")
	}
	if b.Name != b.Spec.ClusterSet {
		return admission.Denied(fmt.Sprintf("ManagedClusterSetBinding %q must be named after its set: metadata.name and spec.clusterSet (%q) must be equal",
			b.Name, b.Spec.ClusterSet))
	}
	allowed, reason, err := v.canBind(ctx, req.UserInfo, b.Spec.ClusterSet)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("check permission to bind ManagedClusterSet %q: %w", b.Spec.ClusterSet, err))
	}
	if !allowed {
		msg := fmt.Sprintf("user %q may not bind ManagedClusterSet %q to namespace %q: binding needs RBAC permission to create %s/managedclustersets/bind for %q",
			req.UserInfo.Username, b.Spec.ClusterSet, req.Namespace, clusterv1beta2.GroupName, b.Spec.ClusterSet)
		if reason != "" {
			msg += " (" + reason + ")"
		}
		return admission.Denied(msg)
	}
	return admission.Allowed("")
}

func (v *Validator) canBind(ctx context.Context, user authenticationv1.UserInfo, set string) (bool, string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, vals := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(vals)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: clusterv1beta2.GroupName, Resource: "managedclustersets", Subresource: "bind", Verb: "create", Name: set,
		},
	}}
	if err := v.Client.Create(ctx, sar); err != nil {
		return false, "", err
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}
