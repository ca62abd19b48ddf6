// Package event builds the compliance Events the policy engines
// (ConfigurationPolicy, CertificatePolicy, OperatorPolicy) write on a
// managed cluster, which the framework agent forwards to the hub.
package event

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Compliance is the compliance event of the engine object obj (of kind
// gvk) for state with msg: on its owning OCM Policy when it has one (as the
// governance framework expects), else on obj; its reason names obj
// ("policy: <namespace>/<name>"), Warning unless Compliant, at now (to the
// second), from source.
func Compliance(obj metav1.Object, gvk schema.GroupVersionKind, state policyv1.ComplianceState, msg string, now time.Time, source string) *corev1.Event {
	ref := corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "Policy" && strings.HasPrefix(o.APIVersion, policyv1.GroupName+"/") {
			ref = corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: obj.GetNamespace(), Name: o.Name, UID: o.UID}
		}
	}
	typ := corev1.EventTypeWarning
	if state == policyv1.Compliant {
		typ = corev1.EventTypeNormal
	}
	t := metav1.NewTime(now.UTC().Truncate(time.Second))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: obj.GetNamespace()},
		InvolvedObject: ref, Reason: "policy: " + obj.GetNamespace() + "/" + obj.GetName(), Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: source},
		FirstTimestamp: t, LastTimestamp: t, Count: 1, ReportingController: source,
	}
}
