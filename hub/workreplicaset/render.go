package workreplicaset

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
)

// render builds the ManifestWork one Apply writes: the replica set's template
// (or the cluster's render under the replica set's DistributionPolicy,
// Apply.Spec, which package distribute made) under the replica set's name in the cluster's namespace, with its labels
// (owner, placement) and the rollout annotations (revision, when it started).
// An existing work is copied, never changed: its other labels and annotations
// stay. It is pure, and the one place a cluster's work is built.
func render(m *workv1alpha1.ManifestWorkReplicaSet, a Apply) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: a.Cluster}}
	if a.Existing != nil {
		w = a.Existing.DeepCopy()
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey] = ownerKey(m)
	w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] = a.Placement
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[TemplateHashAnnotation] = a.Hash
	w.Annotations[RolloutStartedAnnotation] = a.Started.UTC().Format(time.RFC3339)
	if a.Spec != nil {
		w.Spec = *a.Spec.DeepCopy()
	} else {
		w.Spec = *m.Spec.ManifestWorkTemplate.DeepCopy()
	}
	return w
}

func ownerKey(m *workv1alpha1.ManifestWorkReplicaSet) string { return m.Namespace + "." + m.Name }
