package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// Template sync for the policy kinds other engines evaluate on the managed
// cluster, beside ConfigurationPolicy (templatesync.go): each is created,
// updated and removed as a ConfigurationPolicy is (owned by the copy,
// labelled PolicyLabel, the replica's remediationAction winning), through
// unstructured objects, its state read from its status (compliant and the
// newest history entry).

// EngineKinds are the template kinds delivered this way, by kind, with the
// version their CRD serves.
var EngineKinds = map[string]schema.GroupVersionKind{
	"CertificatePolicy": policyv1.GroupVersion.WithKind("CertificatePolicy"),
	"OperatorPolicy":    policyv1beta1.GroupVersion.WithKind("OperatorPolicy"),
}

// engineKey names a delivered template of an engine kind in keep maps.
func engineKey(kind, name string) string { return kind + "/" + name }

// syncEngineTemplate creates or updates u (an EngineKinds template) and
// returns its state. A template the managed cluster's apiserver refuses
// (its CRD's schema: an invalid duration, an unknown enum) is reported as
// a template-error with the apiserver's message (recorded once; the write
// is tried again at the replica's next sync).
func (y *syncer) syncEngineTemplate(ctx context.Context, local *policyv1.Policy, t *policyv1.PolicyTemplate, u *unstructured.Unstructured, deps []Dependency) (TemplateState, error) {
	name, kind := u.GetName(), u.GetKind()
	gvk := EngineKinds[kind]
	st := TemplateState{Name: name, IgnorePending: t.IgnorePending}
	if u.GroupVersionKind() != gvk {
		y.event(ctx, local, name, policyv1.NonCompliant, fmt.Sprintf("NonCompliant; template-error; %s %s: apiVersion %s is not served, use %s",
			kind, name, u.GetAPIVersion(), gvk.GroupVersion()))
		st.Compliance = policyv1.NonCompliant
		return st, y.deleteEngineTemplate(ctx, gvk, name)
	}
	if msg := u.GetAnnotations()[hubtemplate.ErrorAnnotation]; msg != "" {
		y.event(ctx, local, name, policyv1.NonCompliant, HubTemplateErrorPrefix+msg)
		st.Compliance = policyv1.NonCompliant
		return st, y.deleteEngineTemplate(ctx, gvk, name)
	}
	if msg := Unmet(deps); msg != "" {
		y.event(ctx, local, name, policyv1.Pending, msg)
		st.Compliance = policyv1.Pending
		return st, y.deleteEngineTemplate(ctx, gvk, name)
	}
	want := u.DeepCopy()
	want.SetNamespace(y.ns)
	labels := map[string]string{PolicyLabel: local.Name}
	for k, v := range u.GetLabels() {
		labels[k] = v
	}
	want.SetLabels(labels)
	want.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: local.Name, UID: local.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}})
	if local.Spec.RemediationAction != "" {
		if err := unstructured.SetNestedField(want.Object, strings.ToLower(string(local.Spec.RemediationAction)), "spec", "remediationAction"); err != nil {
			y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
			st.Compliance = policyv1.NonCompliant
			return st, nil
		}
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(gvk)
	err := y.spoke.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, cur)
	switch {
	case apierrors.IsNotFound(err):
		delete(want.Object, "status")
		if err := y.spoke.Create(ctx, want); err != nil {
			return y.refused(ctx, local, st, kind, err)
		}
		return st, nil
	case err != nil:
		return st, err
	}
	st.Compliance = policyv1.ComplianceState(nestedString(cur, "status", "compliant"))
	if h, _, _ := unstructured.NestedSlice(cur.Object, "status", "history"); len(h) > 0 {
		if m, ok := h[0].(map[string]any); ok {
			if ts, ok := m["lastTimestamp"].(string); ok {
				if at, err := time.Parse(time.RFC3339, ts); err == nil {
					st.Changed = at
				}
			}
		}
	}
	curSpec, _, _ := unstructured.NestedMap(cur.Object, "spec")
	wantSpec, _, _ := unstructured.NestedMap(want.Object, "spec")
	if !equality.Semantic.DeepEqual(curSpec, wantSpec) || !reflect.DeepEqual(cur.GetLabels(), labels) ||
		len(cur.GetOwnerReferences()) != 1 || cur.GetOwnerReferences()[0].UID != local.UID {
		upd := cur.DeepCopy()
		upd.Object["spec"] = want.Object["spec"]
		upd.SetLabels(labels)
		upd.SetOwnerReferences(want.GetOwnerReferences())
		if err := y.spoke.Patch(ctx, upd, client.MergeFrom(cur)); err != nil {
			return y.refused(ctx, local, st, kind, err)
		}
	}
	return st, nil
}

// refused turns a write the apiserver refused for the object's content into
// a template-error; other errors are retried.
func (y *syncer) refused(ctx context.Context, local *policyv1.Policy, st TemplateState, kind string, err error) (TemplateState, error) {
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return st, fmt.Errorf("write %s %s/%s: %w", kind, y.ns, st.Name, err)
	}
	y.event(ctx, local, st.Name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
	st.Compliance = policyv1.NonCompliant
	return st, nil
}

func (y *syncer) deleteEngineTemplate(ctx context.Context, gvk schema.GroupVersionKind, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(y.ns)
	u.SetName(name)
	if err := y.spoke.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) && !isNoMatch(err) {
		return err
	}
	return nil
}

// pruneEngineTemplates deletes the engine-kind templates of policy that keep
// (engineKey) does not name.
func (y *syncer) pruneEngineTemplates(ctx context.Context, policy string, keep map[string]bool) error {
	for kind, gvk := range EngineKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := y.spoke.List(ctx, l, client.InNamespace(y.ns), client.MatchingLabels{PolicyLabel: policy}); err != nil {
			if isNoMatch(err) {
				continue // the kind is not installed: nothing to prune
			}
			return err
		}
		for i := range l.Items {
			if keep[engineKey(kind, l.Items[i].GetName())] {
				continue
			}
			if err := y.spoke.Delete(ctx, &l.Items[i]); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// engineCompliance is status.compliant of an engine-kind object named by a
// dependency ("" when it does not exist).
func (y *syncer) engineCompliance(ctx context.Context, gvk schema.GroupVersionKind, name string) policyv1.ComplianceState {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if y.spoke.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, u) != nil {
		return ""
	}
	return policyv1.ComplianceState(nestedString(u, "status", "compliant"))
}

func nestedString(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// isNoMatch: the managed cluster does not serve the kind (its CRD is absent).
func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }
