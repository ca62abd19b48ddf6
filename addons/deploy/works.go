package deploy

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// Rendered is an addon's manifests for one cluster, as ManifestWorks.
type Rendered struct {
	// Deploy are the works addon-<name>-deploy-<i>, in order.
	Deploy []*workv1.ManifestWork
	// PreDelete is the hook work addon-<name>-pre-delete (nil without a hook).
	PreDelete *workv1.ManifestWork
}

// isHook reports whether a manifest is a pre-delete hook.
func isHook(o metav1.Object) bool {
	if _, ok := o.GetLabels()[ocm.AddonPreDeleteHookLabel]; ok {
		return true
	}
	_, ok := o.GetAnnotations()[addonv1alpha1.AddonPreDeleteHookAnnotationKey]
	return ok
}

// Render turns objs into the works of addon on cluster. Each work's manifests
// stay within limit bytes (JSON); a single manifest larger than limit is an
// error naming it. probe (optional) adds feedback rules for WorkField health.
func Render(addon, cluster string, objs []runtime.Object, limit int, probe *framework.Probe) (Rendered, error) {
	var out Rendered
	var deploy [][]workv1.Manifest
	var hooks []workv1.Manifest
	var hookOpts []workv1.ManifestConfigOption
	var namespaces []workv1.OrphaningRule
	size := 0
	for i, o := range objs {
		if o == nil {
			return out, fmt.Errorf("manifest %d is nil", i)
		}
		raw, err := json.Marshal(o)
		if err != nil {
			return out, fmt.Errorf("manifest %d: %w", i, err)
		}
		acc, err := meta.Accessor(o)
		if err != nil {
			return out, fmt.Errorf("manifest %d: %w", i, err)
		}
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			return out, fmt.Errorf("manifest %d (%s) has no kind: set TypeMeta (apiVersion and kind)", i, acc.GetName())
		}
		m := workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
		if isHook(acc) {
			hooks = append(hooks, m)
			if opt, ok := hookFeedback(o.GetObjectKind().GroupVersionKind().Group, kind, acc); ok {
				hookOpts = append(hookOpts, opt)
			}
			continue
		}
		if len(raw) > limit {
			return out, fmt.Errorf("manifest %d (%s %s) is %d bytes, more than a ManifestWork holds (%d)", i, kind, acc.GetName(), len(raw), limit)
		}
		if kind == "Namespace" && o.GetObjectKind().GroupVersionKind().Group == "" {
			namespaces = append(namespaces, workv1.OrphaningRule{Resource: "namespaces", Name: acc.GetName()})
		}
		if len(deploy) == 0 || size+len(raw) > limit {
			deploy = append(deploy, nil)
			size = 0
		}
		deploy[len(deploy)-1] = append(deploy[len(deploy)-1], m)
		size += len(raw)
	}
	for i, ms := range deploy {
		w := newWork(addon, cluster, ocm.AddonDeployWorkName(addon, i), ms)
		if probe != nil {
			for _, f := range probe.Fields {
				w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{ResourceIdentifier: f.Resource, FeedbackRules: f.Rules})
			}
		}
		if len(namespaces) > 0 {
			// The install namespace is shared by addons: removing one leaves it.
			w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: namespaces}}
		}
		out.Deploy = append(out.Deploy, w)
	}
	if len(hooks) > 0 {
		w := newWork(addon, cluster, ocm.AddonPreDeleteWorkName(addon), hooks)
		w.Labels[ocm.AddonPreDeleteHookLabel] = ""
		w.Spec.ManifestConfigs = hookOpts
		out.PreDelete = w
	}
	return out, nil
}

func newWork(addon, cluster, name string, ms []workv1.Manifest) *workv1.ManifestWork {
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster, Labels: map[string]string{ocm.AddonNameLabel: addon}},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: ms}},
	}
}

// HookDone reports whether the pre-delete hook work finished: its Job
// succeeded or its Pod completed (status feedback), or the work says Complete.
func HookDone(w *workv1.ManifestWork) bool {
	if w == nil {
		return false
	}
	if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkComplete) {
		return true
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		for _, v := range m.StatusFeedbacks.Values {
			switch {
			case v.Name == "JobComplete" && v.Value.String != nil && *v.Value.String == "True",
				v.Name == "JobSucceeded" && v.Value.String != nil && *v.Value.String == "True",
				v.Name == "succeeded" && v.Value.Integer != nil && *v.Value.Integer > 0,
				v.Name == "PodPhase" && v.Value.String != nil && *v.Value.String == "Succeeded",
				v.Name == "phase" && v.Value.String != nil && *v.Value.String == "Succeeded":
				return true
			}
		}
	}
	return false
}

// hookFeedback asks the work agent for what HookDone reads of a Job or Pod hook.
func hookFeedback(group, kind string, o metav1.Object) (workv1.ManifestConfigOption, bool) {
	id := workv1.ResourceIdentifier{Group: group, Name: o.GetName(), Namespace: o.GetNamespace()}
	switch {
	case group == "batch" && kind == "Job":
		id.Resource = "jobs"
	case group == "" && kind == "Pod":
		id.Resource = "pods"
	default:
		return workv1.ManifestConfigOption{}, false
	}
	return workv1.ManifestConfigOption{ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType,
		JsonPaths: []workv1.JsonPath{{Name: "succeeded", Path: ".status.succeeded"}, {Name: "phase", Path: ".status.phase"}}}}}, true
}

func metaOf(k types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}
}
