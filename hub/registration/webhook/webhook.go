package webhook

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
)

// Path is where the handler is served.
const Path = "/validate-managedcluster"

// ClusterSetLabel assigns a ManagedCluster to a ManagedClusterSet.
const ClusterSetLabel = "cluster.open-cluster-management.io/clusterset"

// Validator checks ManagedCluster changes.
type Validator struct {
	// Client creates SubjectAccessReviews.
	Client  client.Client
	Decoder admission.Decoder
}

// ConfigurationName is the ValidatingWebhookConfiguration the hub owns.
const ConfigurationName = "flotilla-hub"

// placeholderBase is where the placeholder configuration sends reviews: nothing
// listens there, so with failurePolicy Fail every ManagedCluster create and
// update is refused until a hub registers its real address. The address names
// itself in the apiserver's error.
const placeholderBase = "https://127.0.0.1:1/flotilla-hub-not-running-yet"

// Placeholder is the configuration `flotilla init` registers before it creates
// the bootstrap identity: it fails closed, so nobody can create an accepted
// ManagedCluster (spec.hubAcceptsClient=true) before the first hub starts and
// replaces it with its own.
func Placeholder() *admissionregistrationv1.ValidatingWebhookConfiguration {
	hooks := Webhooks()
	for i := range hooks {
		url := placeholderBase + *hooks[i].ClientConfig.URL
		hooks[i].ClientConfig.URL = &url
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks:   hooks,
	}
}

// IsPlaceholder reports whether vwc is still init's placeholder (no hub has
// registered itself yet).
func IsPlaceholder(vwc *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
	for _, h := range vwc.Webhooks {
		if h.ClientConfig.URL != nil && strings.HasPrefix(*h.ClientConfig.URL, placeholderBase) {
			return true
		}
	}
	return false
}

// Webhooks describes the webhook for registration with the hub apiserver;
// ClientConfig.URL holds only the path.
func Webhooks() []admissionregistrationv1.ValidatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	path := Path
	timeout := int32(10)
	return []admissionregistrationv1.ValidatingWebhook{{
		Name:                    "managedclustervalidators.admission.cluster.open-cluster-management.io",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &path},
		FailurePolicy:           &fail,
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          &timeout,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{clusterv1.GroupName}, APIVersions: []string{"*"}, Resources: []string{"managedclusters"},
			},
		}},
	}}
}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	cluster := &clusterv1.ManagedCluster{}
	if err := v.Decoder.DecodeRaw(req.Object, cluster); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode ManagedCluster: %w", err))
	}
	old := &clusterv1.ManagedCluster{}
	if req.Operation == admissionv1.Update {
		if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode old ManagedCluster: %w", err))
		}
	}
	if req.Operation == admissionv1.Create {
		if errs := validation.IsDNS1123Label(cluster.Name); len(errs) > 0 {
			return admission.Denied(fmt.Sprintf("ManagedCluster name %q is not a DNS label (%s): it names the cluster's namespace on the hub", cluster.Name, strings.Join(errs, "; ")))
		}
		if why := ocm.ReservedName(cluster.Name); why != "" {
			return admission.Denied(fmt.Sprintf("ManagedCluster name %q is reserved: %s (the name becomes a hub namespace and a group in the agent's certificate)", cluster.Name, why))
		}
		if !HasNewClusterTaint(cluster.Spec.Taints) {
			// The mutating webhook adds it; without it a placement could decide
			// the cluster before the hub has looked at it.
			return admission.Denied(fmt.Sprintf("ManagedCluster %q must be created with taint %s (effect NoSelect): the hub's mutating webhook %s adds it, and did not (is MutatingWebhookConfiguration %s registered? it is while `flotilla hub` runs)",
				cluster.Name, clusterv1.ManagedClusterTaintUnreachable, MutatingWebhooks()[0].Name, MutatingConfigurationName))
		}
	}
	if req.Operation == admissionv1.Update && slices.Contains(req.UserInfo.Groups, ocm.ManagedClustersGroup) {
		if field := agentChange(old, cluster); field != "" {
			return admission.Denied(fmt.Sprintf("managed cluster agent %q may change only spec.managedClusterClientConfigs of ManagedCluster %q, not %s: labels, taints and the rest are the hub admin's",
				req.UserInfo.Username, cluster.Name, field))
		}
	}
	// Accepting the cluster and marking the hub's own acceptance (auto-approve)
	// ask one question, asked once per request: the hub's auto-approve patch
	// does both. Whoever sets the mark must be one who may accept, on create
	// as on update.
	accepting := cluster.Spec.HubAcceptsClient && !old.Spec.HubAcceptsClient
	mark := cluster.Annotations[csr.AutoAcceptedAnnotation]
	marking := mark != "" && mark != old.Annotations[csr.AutoAcceptedAnnotation]
	if accepting || marking {
		ok, err := v.mayAccept(ctx, req.UserInfo, cluster.Name)
		switch {
		case err != nil:
			return admission.Errored(http.StatusInternalServerError, err)
		case !ok && accepting:
			return admission.Denied(fmt.Sprintf("user %q cannot accept ManagedCluster %q: setting spec.hubAcceptsClient=true requires permission to update managedclusters/accept in API group %s",
				req.UserInfo.Username, cluster.Name, ocm.RegisterGroup))
		case !ok:
			return admission.Denied(fmt.Sprintf("user %q cannot set annotation %s on ManagedCluster %q: it marks the hub's own acceptance and requires permission to update managedclusters/accept in API group %s",
				req.UserInfo.Username, csr.AutoAcceptedAnnotation, cluster.Name, ocm.RegisterGroup))
		}
	}
	if set := cluster.Labels[ClusterSetLabel]; set != "" && set != old.Labels[ClusterSetLabel] {
		ok, err := v.allowed(ctx, req.UserInfo, authorizationv1.ResourceAttributes{
			Group: ocm.ClusterGroup, Resource: "managedclustersets", Subresource: "join", Verb: "create", Name: set,
		})
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if !ok {
			return admission.Denied(fmt.Sprintf("user %q cannot add ManagedCluster %q to cluster set %q: that requires permission to create managedclustersets/join in API group %s",
				req.UserInfo.Username, cluster.Name, set, ocm.ClusterGroup))
		}
	}
	return admission.Allowed("")
}

// mayAccept: may user accept ManagedCluster name (update managedclusters/accept)?
func (v *Validator) mayAccept(ctx context.Context, user authenticationv1.UserInfo, name string) (bool, error) {
	return v.allowed(ctx, user, authorizationv1.ResourceAttributes{
		Group: ocm.RegisterGroup, Resource: "managedclusters", Subresource: "accept", Verb: "update", Name: name,
	})
}

func (v *Validator) allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, val := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(val)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}
	if err := v.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("SubjectAccessReview for %s: %w", user.Username, err)
	}
	return sar.Status.Allowed, nil
}

// agentChange names the first field an agent changed that is not its own to
// change ("" when there is none). Agents report through status; in spec they may
// only publish their apiserver addresses. Labels matter most: placements select
// clusters by label, so a cluster labelling itself could draw in workloads (and
// their secrets) meant for others.
func agentChange(old, cur *clusterv1.ManagedCluster) string {
	switch {
	case !equality.Semantic.DeepEqual(old.Labels, cur.Labels):
		return "metadata.labels"
	case !equality.Semantic.DeepEqual(old.Annotations, cur.Annotations):
		return "metadata.annotations"
	case !equality.Semantic.DeepEqual(old.Finalizers, cur.Finalizers):
		return "metadata.finalizers"
	}
	oldSpec, curSpec := old.Spec.DeepCopy(), cur.Spec.DeepCopy()
	oldSpec.ManagedClusterClientConfigs, curSpec.ManagedClusterClientConfigs = nil, nil
	if !equality.Semantic.DeepEqual(oldSpec, curSpec) {
		return "spec (other than managedClusterClientConfigs)"
	}
	return ""
}
