// Package object decides what of a managed cluster's object the fleet search
// keeps and which columns it is found by. It is pure: the agent calls
// Sanitize before an object leaves its cluster, the hub calls Sanitize again
// (a forged or old agent gains nothing) and Extract to index it.
package object

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MaxBytes is the largest sanitized object the index keeps (a ConfigMap
// can hold 1 MiB; the index is for finding, not for copying clusters).
const MaxBytes = 256 << 10

// lastApplied is kubectl's annotation holding the whole applied object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Secrets are the core group's Secrets, whose data never leaves a cluster.
var Secrets = schema.GroupResource{Resource: "secrets"}

// SecretKind is the kind of Secrets.
var SecretKind = schema.GroupKind{Kind: "Secret"}

// Sanitize strips from u what must not, or need not, leave its cluster:
// managedFields always; for Secrets (kind Secret of the core group, in any
// version), data and stringData and the last-applied annotation (which
// holds the data kubectl applied), keeping type and metadata. It changes u
// in place and returns it.
func Sanitize(u *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if u.GroupVersionKind().GroupKind() == SecretKind {
		delete(u.Object, "data")
		delete(u.Object, "stringData")
		dropAnnotation(u, lastApplied)
	}
	return u
}

// Truncated is the annotation Fit sets on an object it cut to its metadata.
const Truncated = "search.flotilla.dev/truncated"

// Fit is u's JSON, at most MaxBytes: an object bigger than that loses the
// last-applied annotation, then everything but apiVersion, kind, metadata
// and status.phase, and is marked with the annotation Truncated; then, if
// still too big, every other annotation; then it is refused (an error). It
// changes u in place.
func Fit(u *unstructured.Unstructured) ([]byte, error) {
	raw, err := u.MarshalJSON()
	if err != nil || len(raw) <= MaxBytes {
		return raw, err
	}
	dropAnnotation(u, lastApplied)
	if raw, err = u.MarshalJSON(); err != nil || len(raw) <= MaxBytes {
		return raw, err
	}
	phase, hasPhase, _ := unstructured.NestedString(u.Object, "status", "phase")
	u.Object = map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}
	if hasPhase {
		u.Object["status"] = map[string]any{"phase": phase}
	}
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[Truncated] = fmt.Sprintf("the object was bigger than %d bytes: the index keeps its metadata", MaxBytes)
	u.SetAnnotations(a)
	if raw, err = u.MarshalJSON(); err != nil || len(raw) <= MaxBytes {
		return raw, err
	}
	// Metadata that big is not what an apiserver keeps (annotations are
	// bounded to 256 KiB): the annotations go, then the object is refused.
	u.SetAnnotations(map[string]string{Truncated: fmt.Sprintf("the object was bigger than %d bytes, its metadata too: the index keeps the rest of its metadata", MaxBytes)})
	if raw, err = u.MarshalJSON(); err != nil || len(raw) <= MaxBytes {
		return raw, err
	}
	return nil, fmt.Errorf("%s %q: its metadata without annotations is %d bytes, more than the %d an indexed object may hold", u.GetKind(), u.GetName(), len(raw), MaxBytes)
}

func dropAnnotation(u *unstructured.Unstructured, key string) {
	a := u.GetAnnotations()
	if _, ok := a[key]; !ok {
		return
	}
	delete(a, key)
	if len(a) == 0 {
		a = nil
	}
	u.SetAnnotations(a)
}

// Columns are what an object is found by, besides its whole JSON.
type Columns struct {
	Namespace, Name, UID, ResourceVersion string
	Labels                                map[string]string
	// Owner is the controller owner, "Kind/name", or "".
	Owner   string
	Created time.Time
	// Images are the images of its containers, init and ephemeral
	// containers (Pods, and pod templates of workloads), sorted, distinct.
	Images []string
	// Phase is status.phase (Pods, Namespaces, PersistentVolumeClaims...).
	Phase string
	// Reasons are the containers' waiting and terminated reasons of a Pod
	// (CrashLoopBackOff, ImagePullBackOff, OOMKilled...), sorted, distinct.
	Reasons []string
	// Ready is "true" or "false" where the kind has a readiness: a Pod's and
	// a Node's Ready condition, a workload's ready replicas against its
	// desired replicas. "" otherwise.
	Ready string
	// ReadyReplicas and Replicas of a workload (Deployment, StatefulSet,
	// ReplicaSet, DaemonSet: desired and ready pods); -1 for other kinds.
	ReadyReplicas, Replicas int64
}

// Extract reads u's columns; u is a sanitized object. It fails when u has no
// name or UID.
func Extract(u *unstructured.Unstructured) (Columns, error) {
	c := Columns{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Created: u.GetCreationTimestamp().UTC(), ReadyReplicas: -1, Replicas: -1}
	if c.Name == "" || c.UID == "" {
		return c, fmt.Errorf("%s %q: an indexed object needs metadata.name and metadata.uid", u.GetKind(), c.Name)
	}
	for _, o := range u.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			c.Owner = o.Kind + "/" + o.Name
		}
	}
	c.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	gk := u.GroupVersionKind().GroupKind()
	switch gk {
	case schema.GroupKind{Kind: "Pod"}:
		c.Images = images(u.Object, "spec")
		c.Reasons = podReasons(u.Object)
		c.Ready = condition(u.Object, "Ready")
	case schema.GroupKind{Kind: "Node"}:
		c.Ready = condition(u.Object, "Ready")
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		c.Images = images(u.Object, "spec", "template", "spec")
		c.Replicas = 1 // the API's default when spec.replicas is unset
		if n, ok := nestedInt(u.Object, "spec", "replicas"); ok {
			c.Replicas = n
		}
		c.ReadyReplicas, _ = nestedInt(u.Object, "status", "readyReplicas")
		c.Ready = fmt.Sprint(c.ReadyReplicas >= c.Replicas)
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		c.Images = images(u.Object, "spec", "template", "spec")
		c.Replicas, _ = nestedInt(u.Object, "status", "desiredNumberScheduled")
		c.ReadyReplicas, _ = nestedInt(u.Object, "status", "numberReady")
		c.Ready = fmt.Sprint(c.ReadyReplicas >= c.Replicas)
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		c.Images = images(u.Object, "spec", "template", "spec")
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		c.Images = images(u.Object, "spec", "jobTemplate", "spec", "template", "spec")
	}
	return c, nil
}

// nestedInt reads a number as the apiserver's decoder gives it (int64) or
// as encoding/json does (float64).
func nestedInt(obj map[string]any, path ...string) (int64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// images are the distinct, sorted images of the pod spec at path.
func images(obj map[string]any, path ...string) []string {
	set := map[string]bool{}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _, _ := unstructured.NestedSlice(obj, append(append([]string{}, path...), list)...)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok && img != "" {
					set[img] = true
				}
			}
		}
	}
	return sorted(set)
}

// podReasons are the waiting and terminated reasons of a Pod's containers.
func podReasons(obj map[string]any) []string {
	set := map[string]bool{}
	for _, list := range []string{"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"} {
		cs, _, _ := unstructured.NestedSlice(obj, "status", list)
		for _, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			for _, state := range []string{"waiting", "terminated"} {
				if r, _, _ := unstructured.NestedString(m, "state", state, "reason"); r != "" {
					set[r] = true
				}
			}
		}
	}
	return sorted(set)
}

// condition is "true" or "false" for status.conditions[type=t], "" when absent.
func condition(obj map[string]any, t string) string {
	cs, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		s, _ := m["status"].(string)
		return fmt.Sprint(strings.EqualFold(s, "True"))
	}
	return ""
}

func sorted(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Digest is the digest of a resource's set of objects on a cluster, from
// each object's UID and resourceVersion: what an agent and the hub compare
// to tell whether the hub's copy is current without sending the objects.
func Digest(versions map[string]string) string {
	uids := make([]string, 0, len(versions))
	for uid := range versions {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	h := sha256.New()
	for _, uid := range uids {
		h.Write([]byte(uid))
		h.Write([]byte{' '})
		h.Write([]byte(versions[uid]))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
