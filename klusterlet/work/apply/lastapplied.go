package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// HashAnnotation is set on every object the agent creates or updates: the
	// hex SHA-256 of the manifest it last applied (normalised: status dropped,
	// Secret stringData folded into data, keys sorted). A live value that
	// differs from the current manifest's hash means the manifest changed.
	HashAnnotation = "work.flotilla.dev/manifest-hash"
	// KeysAnnotation lists the label and annotation keys the last applied
	// manifest set, as JSON {"labels":[...],"annotations":[...]} (absent when
	// it set none). With it the Update strategy removes a label or annotation
	// that left the manifest, while keeping those others added.
	KeysAnnotation = "work.flotilla.dev/manifest-metadata-keys"
	// PendingOwnerAnnotation is on an object the agent wrote for a new work
	// before the work's AppliedManifestWork existed (the two are written at
	// once, docs/work.md "The critical path of a new work"): its value names
	// that record. Adopt then replaces it with the owner reference. Until
	// then cleanup finds the object by it, as it finds owned ones.
	PendingOwnerAnnotation = "work.flotilla.dev/pending-owner"
)

// markPending sets PendingOwnerAnnotation on ann when owner has a name but
// no UID yet (its record is being created), and drops it otherwise: a
// manifest cannot set it.
func markPending(ann map[string]string, owner metav1.OwnerReference) map[string]string {
	if owner.UID == "" && owner.Name != "" {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[PendingOwnerAnnotation] = owner.Name
		return ann
	}
	delete(ann, PendingOwnerAnnotation)
	return ann
}

// ManifestHash is the value of HashAnnotation for a manifest.
func ManifestHash(desired *unstructured.Unstructured) string {
	obj := desired.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "status")
	if ann := obj.GetAnnotations(); ann != nil {
		delete(ann, HashAnnotation)
		delete(ann, KeysAnnotation)
		if len(ann) == 0 {
			unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
		} else {
			obj.SetAnnotations(ann)
		}
	}
	b, err := json.Marshal(normalise(obj.Object)) // maps marshal with sorted keys
	if err != nil {
		// A decoded manifest always marshals; hash its string form regardless.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type metadataKeys struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// Stamp records on obj (a manifest about to be written) which manifest it is:
// HashAnnotation and KeysAnnotation.
func Stamp(obj *unstructured.Unstructured, hash string) {
	obj.SetAnnotations(stamped(obj.GetAnnotations(), obj, hash))
}

// stamped is ann with HashAnnotation and KeysAnnotation set for the manifest
// desired.
func stamped(ann map[string]string, desired *unstructured.Unstructured, hash string) map[string]string {
	out := make(map[string]string, len(ann)+2)
	for k, v := range ann {
		out[k] = v
	}
	delete(out, KeysAnnotation)
	keys := metadataKeys{Labels: sortedKeys(desired.GetLabels()), Annotations: sortedKeys(desired.GetAnnotations())}
	if len(keys.Labels)+len(keys.Annotations) > 0 {
		b, _ := json.Marshal(keys)
		out[KeysAnnotation] = string(b)
	}
	out[HashAnnotation] = hash
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != HashAnnotation && k != KeysAnnotation {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// lastKeys reads KeysAnnotation from a live object (empty when absent or
// unreadable: then no label or annotation is removed).
func lastKeys(live *unstructured.Unstructured) metadataKeys {
	var k metadataKeys
	if v, ok := live.GetAnnotations()[KeysAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &k)
	}
	return k
}

// UpdateBody is the object the Update strategy writes over live: the desired
// manifest replaces everything outside metadata and status (so a field that
// left the manifest, or a key someone added inside a map the manifest sets,
// goes), while metadata keeps what others added: labels and annotations
// (except those the previous manifest set and this one no longer does),
// finalizers and owner references. owner is added to the owners; the
// annotations are stamped with hash.
func UpdateBody(desired, live *unstructured.Unstructured, hash string, owner metav1.OwnerReference) *unstructured.Unstructured {
	prev := lastKeys(live)
	merged := desired.DeepCopy()
	merged.SetResourceVersion(live.GetResourceVersion())
	merged.SetUID(live.GetUID())
	merged.SetFinalizers(live.GetFinalizers())
	merged.SetLabels(mergeOwned(live.GetLabels(), desired.GetLabels(), prev.Labels))
	merged.SetAnnotations(markPending(stamped(mergeOwned(live.GetAnnotations(), desired.GetAnnotations(), prev.Annotations), desired, hash), owner))
	merged.SetOwnerReferences(withOwner(mergeOwners(live.GetOwnerReferences(), desired.GetOwnerReferences()), owner))
	if st, ok := live.Object["status"]; ok {
		merged.Object["status"] = st
	}
	return merged
}

// mergeOwned is live's map without the keys the previous manifest owned and
// this one dropped, with desired's entries set on top.
func mergeOwned(live, desired map[string]string, previouslyOwned []string) map[string]string {
	out := make(map[string]string, len(live)+len(desired))
	for k, v := range live {
		out[k] = v
	}
	for _, k := range previouslyOwned {
		if _, still := desired[k]; !still {
			delete(out, k)
		}
	}
	for k, v := range desired {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Drifted reports whether live differs from expected, the object the apiserver
// says an update with UpdateBody would produce (a dry run): in any field
// outside metadata and status, or in labels or annotations. Both come from the
// apiserver, so defaults it fills in and values it keeps on update (a
// Service's clusterIP) are on both sides and are not drift; a key someone
// added to a ConfigMap's data, or a field that left the manifest, is.
func Drifted(expected, live *unstructured.Unstructured) bool {
	for _, o := range []map[string]interface{}{expected.Object, live.Object} {
		for k := range o {
			switch k {
			case "metadata", "status", "apiVersion", "kind":
				continue
			}
			if !reflect.DeepEqual(expected.Object[k], live.Object[k]) {
				return true
			}
		}
	}
	return !sameStrings(expected.GetLabels(), live.GetLabels()) ||
		!sameStrings(expected.GetAnnotations(), live.GetAnnotations())
}

func sameStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Step is what the Update strategy does with an object that exists.
type Step int

const (
	// Keep: the live object is known to match the manifest; no request.
	Keep Step = iota
	// Verify: the manifest is unchanged (or the object predates
	// HashAnnotation); ask the apiserver what an update would produce (dry
	// run) and write only if that differs from live (Drifted).
	Verify
	// Write: the manifest changed, or the object is not ours yet; update.
	Write
)

func (s Step) String() string {
	return [...]string{"Keep", "Verify", "Write"}[s]
}

// Verified remembers that an object, at a resourceVersion, matched the
// manifest with a hash. The zero value remembers nothing.
type Verified struct {
	ResourceVersion, Hash string
}

// UpdateStep decides what the Update strategy does with an existing live
// object, given the manifest's hash, whether live already carries this
// agent's owner reference, and what was last verified about this object.
func UpdateStep(hash string, live *unstructured.Unstructured, owned bool, last Verified) Step {
	if !owned {
		return Write
	}
	prev, stamped := live.GetAnnotations()[HashAnnotation]
	switch {
	case stamped && prev != hash:
		return Write
	case last.Hash == hash && last.ResourceVersion != "" && last.ResourceVersion == live.GetResourceVersion():
		return Keep
	}
	return Verify
}
