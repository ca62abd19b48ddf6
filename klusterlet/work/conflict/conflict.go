package conflict

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

// Holder is a work that manages an object: it wrote it and is an owner.
type Holder struct {
	// Work names the ManifestWork for people: "cluster1/work-a".
	Work string
}

// Error says a manifest was not applied because another work manages its
// object with different content.
type Error struct {
	// Object names the object: "ConfigMap default/shared".
	Object string
	Holder Holder
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s is managed by ManifestWork %s with different content; this work leaves it unchanged until the conflict ends "+
		"(make both manifests identical, or remove it from one of the works)", e.Object, e.Holder.Work)
}

// Lookup returns an AppliedManifestWork by name (nil when it does not exist).
type Lookup func(name string) *workv1.AppliedManifestWork

// Decide says whether the work whose AppliedManifestWork is self may write
// desiredHash (the manifest hash, apply.HashAnnotation) over live. It may when
// the object does not exist, already carries this content (identical content
// is shared), or has no other holder, or when self is the first holder among
// its owners (ownerReferences are appended, so the first is the work that
// managed it first). Otherwise it returns the first holder: the work that
// keeps the object. A holder is an owner reference to an AppliedManifestWork
// that exists and is not being deleted; hashAnnotation is the annotation that
// records the content an object was written with.
func Decide(self types.UID, desiredHash, hashAnnotation string, live *unstructured.Unstructured, lookup Lookup) (Holder, bool) {
	if live == nil || live.GetAnnotations()[hashAnnotation] == desiredHash {
		return Holder{}, false
	}
	for _, ref := range live.GetOwnerReferences() {
		if !isApplied(ref) {
			continue
		}
		if ref.UID == self {
			return Holder{}, false
		}
		amw := lookup(ref.Name)
		if amw == nil || amw.UID != ref.UID || amw.DeletionTimestamp != nil {
			continue
		}
		return Holder{Work: WorkOf(amw)}, true
	}
	return Holder{}, false
}

func isApplied(ref metav1.OwnerReference) bool {
	return ref.Kind == "AppliedManifestWork" && ref.APIVersion == workv1.GroupVersion.String()
}

// WorkOf names the ManifestWork of an AppliedManifestWork: "<cluster>/<work>"
// (the cluster from the record's label, else its agent ID).
func WorkOf(amw *workv1.AppliedManifestWork) string {
	cluster := amw.Labels[applied.ClusterLabel]
	if cluster == "" {
		cluster = amw.Spec.AgentID
	}
	return cluster + "/" + amw.Spec.ManifestWorkName
}
