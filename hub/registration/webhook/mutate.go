package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/registration/health"
)

// MutatePath is where the mutating handler is served.
const MutatePath = "/mutate-managedcluster"

// MutatingConfigurationName is the MutatingWebhookConfiguration the hub owns
// (`flotilla init` registers a fail-closed placeholder under the same name).
const MutatingConfigurationName = ConfigurationName

// Defaulter taints every new ManagedCluster unreachable (NoSelect) at
// admission: a cluster exists on the hub with that taint from its first
// stored version, so no placement can decide it before the hub has looked at
// it. It is what the health controller would add anyway (a new cluster has no
// Available condition: health.Taints); that controller removes it once the
// cluster's agent reports Available=True, as in OCM.
//
// It also gives the new cluster the hub's cleanup finalizer, which the
// cluster controller would otherwise add in a write of its own: one write
// fewer per joining cluster, and a version fewer in the apiserver's watch
// cache (at 5,000 clusters joining, 5,000 writes and their events).
type Defaulter struct {
	// Now is the clock (the taint's timeAdded). Default time.Now.
	Now func() time.Time
}

// Handle implements admission.Handler. It reads only metadata.finalizers and
// spec.taints and patches only those: whatever else is malformed in the
// object is for the apiserver's schema validation (which runs after mutating
// webhooks) to refuse in its own words. An object whose taints or finalizers
// cannot be read is let through unchanged: the validating webhook then
// refuses it for want of the taint, or the schema does (the cluster
// controller adds a missing finalizer).
func (d *Defaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var partial struct {
		Metadata struct {
			Finalizers []string `json:"finalizers"`
		} `json:"metadata"`
		Spec struct {
			Taints []clusterv1.Taint `json:"taints"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(req.Object.Raw, &partial); err != nil {
		return admission.Allowed("spec.taints or metadata.finalizers unreadable: left to validation")
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	taints, changed := NewClusterTaints(partial.Spec.Taints, now())
	if !changed {
		taints = nil
	}
	finalizers := withFinalizer(partial.Metadata.Finalizers, clusterv1.ManagedClusterFinalizer)
	if taints == nil && finalizers == nil {
		return admission.Allowed("")
	}
	patched, err := withDefaults(req.Object.Raw, taints, finalizers)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("ManagedCluster: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}

// withFinalizer returns finalizers with f appended, or nil when f is there.
func withFinalizer(finalizers []string, f string) []string {
	if slices.Contains(finalizers, f) {
		return nil
	}
	return append(slices.Clone(finalizers), f)
}

// withDefaults returns raw (a JSON object) with spec.taints set to taints
// and metadata.finalizers to finalizers, each when not nil, and everything
// else as it was (numbers kept exact).
func withDefaults(raw []byte, taints []clusterv1.Taint, finalizers []string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	field := func(name string) map[string]any {
		m, ok := obj[name].(map[string]any)
		if !ok {
			m = map[string]any{}
			obj[name] = m
		}
		return m
	}
	if taints != nil {
		field("spec")["taints"] = taints
	}
	if finalizers != nil {
		field("metadata")["finalizers"] = finalizers
	}
	return json.Marshal(obj)
}

// NewClusterTaints are the taints a new ManagedCluster is stored with: its own,
// and the unreachable NoSelect taint the hub's health controller gives a
// cluster without an Available condition (every new one: status is not
// written at create). changed is false when they are there already.
func NewClusterTaints(taints []clusterv1.Taint, now time.Time) ([]clusterv1.Taint, bool) {
	return health.Taints(taints, nil, metav1.NewTime(now.Truncate(time.Second)))
}

// HasNewClusterTaint reports whether taints hold the unreachable NoSelect
// taint every new ManagedCluster must carry.
func HasNewClusterTaint(taints []clusterv1.Taint) bool {
	for _, t := range taints {
		if t.Key == clusterv1.ManagedClusterTaintUnreachable && t.Effect == clusterv1.TaintEffectNoSelect {
			return true
		}
	}
	return false
}

// MutatingWebhooks describes the mutating webhook for registration with the
// hub apiserver; ClientConfig.URL holds only the path. Only CREATE: later
// taints are the health controller's, a finalizer removed later the cluster
// controller's.
func MutatingWebhooks() []admissionregistrationv1.MutatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	again := admissionregistrationv1.IfNeededReinvocationPolicy
	path := MutatePath
	timeout := int32(10)
	return []admissionregistrationv1.MutatingWebhook{{
		Name:                    "managedclustermutators.admission.cluster.open-cluster-management.io",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &path},
		FailurePolicy:           &fail,
		SideEffects:             &none,
		ReinvocationPolicy:      &again,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          &timeout,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{clusterv1.GroupName}, APIVersions: []string{"*"}, Resources: []string{"managedclusters"},
			},
		}},
	}}
}

// MutatingPlaceholder is the mutating configuration `flotilla init` registers
// beside Placeholder: it fails closed (nothing listens at its address), and
// the hub only has to update it, by name.
func MutatingPlaceholder() *admissionregistrationv1.MutatingWebhookConfiguration {
	hooks := MutatingWebhooks()
	for i := range hooks {
		url := placeholderBase + *hooks[i].ClientConfig.URL
		hooks[i].ClientConfig.URL = &url
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName},
		Webhooks:   hooks,
	}
}
