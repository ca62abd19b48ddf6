package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Applier applies manifests to the managed cluster.
type Applier struct {
	Client dynamic.Interface
	Mapper *Mapper

	mu sync.Mutex
	// verified remembers, per object (objectKey), the resourceVersion at
	// which it last matched its manifest (Update strategy), so an object
	// nobody touched costs one read per sync and no dry run.
	verified map[string]Verified
}

func objectKey(gr schema.GroupResource, namespace, name string) string {
	return gr.String() + "/" + namespace + "/" + name
}

func (a *Applier) lastVerified(t Target) Verified {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verified[objectKey(t.GVR.GroupResource(), t.Namespace, t.Name)]
}

func (a *Applier) remember(t Target, obj *unstructured.Unstructured, hash string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verified == nil {
		a.verified = map[string]Verified{}
	}
	a.verified[objectKey(t.GVR.GroupResource(), t.Namespace, t.Name)] = Verified{ResourceVersion: obj.GetResourceVersion(), Hash: hash}
}

func (a *Applier) forget(gr schema.GroupResource, namespace, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.verified, objectKey(gr, namespace, name))
}

// Target is a manifest resolved against the managed cluster's API.
type Target struct {
	GVK        schema.GroupVersionKind
	GVR        schema.GroupVersionResource
	Namespaced bool
	Namespace  string
	Name       string
}

// Resolve maps a manifest to the resource it lives in. A cluster-scoped
// resource ignores a namespace given in the manifest; a namespaced one without
// a namespace is an error.
func (a *Applier) Resolve(obj *unstructured.Unstructured) (Target, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.Mapping(gvk)
	if err != nil {
		return Target{GVK: gvk, Name: obj.GetName(), Namespace: obj.GetNamespace()}, err
	}
	t := Target{GVK: gvk, GVR: mapping.Resource, Name: obj.GetName()}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		t.Namespaced = true
		t.Namespace = obj.GetNamespace()
		if t.Namespace == "" {
			return t, fmt.Errorf("%s %q is namespaced but the manifest has no metadata.namespace", gvk.Kind, t.Name)
		}
	}
	return t, nil
}

func (a *Applier) resource(t Target) dynamic.ResourceInterface {
	if t.Namespaced {
		return a.Client.Resource(t.GVR).Namespace(t.Namespace)
	}
	return a.Client.Resource(t.GVR)
}

// Get reads the live object (nil, nil when it does not exist).
func (a *Applier) Get(ctx context.Context, t Target) (*unstructured.Unstructured, error) {
	live, err := a.resource(t).Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// Guard is asked before the Update and ServerSideApply strategies change an
// object that exists: live is the object, hash the manifest's hash. An error
// stops the write; Apply then returns live and that error.
type Guard func(live *unstructured.Unstructured, hash string) error

// prepared is the manifest as it is written: no status, and no namespace for a
// cluster-scoped resource.
func prepared(t Target, desired *unstructured.Unstructured) *unstructured.Unstructured {
	desired = desired.DeepCopy()
	if !t.Namespaced {
		desired.SetNamespace("")
	}
	unstructured.RemoveNestedField(desired.Object, "status")
	// Only the agent marks an object pending (markPending): no manifest may
	// carry the mark, with any strategy.
	if ann := desired.GetAnnotations(); ann != nil {
		if _, ok := ann[PendingOwnerAnnotation]; ok {
			delete(ann, PendingOwnerAnnotation)
			desired.SetAnnotations(ann)
		}
	}
	return desired
}

// Hash is the HashAnnotation value Apply writes for the manifest desired.
func Hash(t Target, desired *unstructured.Unstructured) string {
	return ManifestHash(prepared(t, desired))
}

// Apply puts desired on the cluster with the given strategy and returns the
// live object afterwards. owner is added to the object's ownerReferences
// (except for ReadOnly, which never writes). fresh says the object is probably
// new (not applied before): then creating is tried before reading, which saves
// a request for new works. guard (optional) may forbid changing an object
// that exists (Update and ServerSideApply).
func (a *Applier) Apply(ctx context.Context, t Target, desired *unstructured.Unstructured, strategy *workv1.UpdateStrategy, owner metav1.OwnerReference, fresh bool, guard Guard) (*unstructured.Unstructured, error) {
	desired = prepared(t, desired)
	hash := ManifestHash(desired)
	typ := workv1.UpdateStrategyTypeUpdate
	if strategy != nil && strategy.Type != "" {
		typ = strategy.Type
	}
	switch typ {
	case workv1.UpdateStrategyTypeReadOnly:
		live, err := a.Get(ctx, t)
		if err == nil && live == nil {
			return nil, nil
		}
		return live, err
	case workv1.UpdateStrategyTypeCreateOnly:
		if fresh {
			if live, err := a.create(ctx, t, desired.DeepCopy(), owner, hash); !apierrors.IsAlreadyExists(err) {
				return live, err
			}
		}
		live, err := a.Get(ctx, t)
		if err != nil || live != nil {
			return live, err
		}
		return a.create(ctx, t, desired, owner, hash)
	case workv1.UpdateStrategyTypeServerSideApply:
		return a.serverSideApply(ctx, t, desired, strategy.ServerSideApply, owner, fresh, hash, guard)
	case workv1.UpdateStrategyTypeUpdate:
		if fresh {
			live, err := a.createRemembered(ctx, t, desired, owner, hash)
			if !apierrors.IsAlreadyExists(err) {
				return live, err
			}
		}
		return a.update(ctx, t, desired, owner, hash, guard)
	default:
		return nil, fmt.Errorf("unknown update strategy %q (want Update, CreateOnly, ServerSideApply or ReadOnly)", typ)
	}
}

func (a *Applier) create(ctx context.Context, t Target, desired *unstructured.Unstructured, owner metav1.OwnerReference, hash string) (*unstructured.Unstructured, error) {
	desired.SetOwnerReferences(withOwner(desired.GetOwnerReferences(), owner))
	desired.SetResourceVersion("")
	desired.SetUID("")
	Stamp(desired, hash)
	desired.SetAnnotations(markPending(desired.GetAnnotations(), owner))
	return a.resource(t).Create(ctx, desired, metav1.CreateOptions{})
}

// Adopt gives live, which Apply wrote while owner's record was being created
// (PendingOwnerAnnotation naming owner.Name), its owner reference and drops
// the annotation, in one merge patch that holds only at the object's
// resourceVersion. When the object changed since (a controller wrote its
// status), it is read again and patched again, as long as it is the same
// object (UID) and still carries the mark; without the mark there is nothing
// left to adopt.
func (a *Applier) Adopt(ctx context.Context, t Target, live *unstructured.Unstructured, owner metav1.OwnerReference) (*unstructured.Unstructured, error) {
	uid := live.GetUID()
	for attempt := 0; ; attempt++ {
		refs := make([]interface{}, 0, len(live.GetOwnerReferences())+1)
		for _, r := range withOwner(live.GetOwnerReferences(), owner) {
			refs = append(refs, r)
		}
		patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
			"resourceVersion": live.GetResourceVersion(),
			"ownerReferences": refs,
			"annotations":     map[string]interface{}{PendingOwnerAnnotation: nil},
		}})
		if err != nil {
			return nil, err
		}
		out, err := a.resource(t).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			// Verified as it was written, unless something else wrote it since.
			if v := a.lastVerified(t); v.ResourceVersion == live.GetResourceVersion() {
				a.remember(t, out, v.Hash)
			}
			return out, nil
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return nil, err
		}
		if live, err = a.Get(ctx, t); err != nil {
			return nil, err
		}
		if live == nil || live.GetUID() != uid || live.GetAnnotations()[PendingOwnerAnnotation] != owner.Name {
			return live, nil
		}
	}
}

// update creates the object, or makes it match the manifest again: the
// manifest changed (HashAnnotation differs), or the object drifted (a dry-run
// update would change it). See UpdateBody for what is kept of the live object.
// A conflict (someone wrote in between) starts over with a fresh read.
func (a *Applier) update(ctx context.Context, t Target, desired *unstructured.Unstructured, owner metav1.OwnerReference, hash string, guard Guard) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		out, err = a.updateOnce(ctx, t, desired, owner, hash, guard)
		return err
	})
	return out, err
}

func (a *Applier) updateOnce(ctx context.Context, t Target, desired *unstructured.Unstructured, owner metav1.OwnerReference, hash string, guard Guard) (*unstructured.Unstructured, error) {
	live, err := a.Get(ctx, t)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return a.createRemembered(ctx, t, desired, owner, hash)
	}
	if guard != nil {
		if err := guard(live, hash); err != nil {
			return live, err
		}
	}
	step := UpdateStep(hash, live, hasOwner(live.GetOwnerReferences(), owner), a.lastVerified(t))
	if step == Keep {
		return live, nil
	}
	body := UpdateBody(desired, live, hash, owner)
	if step == Verify {
		expected, err := a.resource(t).Update(ctx, body.DeepCopy(), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil && !Drifted(expected, live):
			a.remember(t, live, hash)
			return live, nil
		case refused(err) && Covers(desired, live):
			// The apiserver refuses even an unchanged update (a field it set
			// after creation is immutable, like a Job's selector): the object
			// has what the manifest says, which is all that can be checked.
			a.remember(t, live, hash)
			return live, nil
		}
	}
	out, err := a.resource(t).Update(ctx, body, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err): // deleted since the read
		return a.createRemembered(ctx, t, desired, owner, hash)
	case err != nil:
		return nil, err
	}
	a.remember(t, out, hash)
	return out, nil
}

func (a *Applier) createRemembered(ctx context.Context, t Target, desired *unstructured.Unstructured, owner metav1.OwnerReference, hash string) (*unstructured.Unstructured, error) {
	created, err := a.create(ctx, t, desired.DeepCopy(), owner, hash)
	if err != nil {
		return nil, err
	}
	a.remember(t, created, hash)
	return created, nil
}

// refused says the apiserver rejected a request for what it contains (invalid,
// forbidden by admission or RBAC), not for a passing reason.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err)
}

// serverSideApply applies desired as its field manager. Fields the manager set
// before and desired no longer has are removed by the apiserver; fields other
// managers set are theirs. The apply is skipped when the manifest is unchanged
// (HashAnnotation) and the live object still has every field it sets.
func (a *Applier) serverSideApply(ctx context.Context, t Target, desired *unstructured.Unstructured, cfg *workv1.ServerSideApplyConfig, owner metav1.OwnerReference, fresh bool, hash string, guard Guard) (*unstructured.Unstructured, error) {
	manager, force := workv1.DefaultFieldManager, false
	if cfg != nil {
		force = cfg.Force
		if cfg.FieldManager != "" {
			manager = cfg.FieldManager
		}
	}
	if present, change := IgnoreFields(cfg); len(present)+len(change) > 0 {
		return a.serverSideApplyIgnoring(ctx, t, desired, manager, force, owner, guard, present, change)
	}
	if !fresh || guard != nil {
		// Applying is idempotent, but reading first spares the apiserver a
		// write path for the common case: nothing changed.
		live, err := a.Get(ctx, t)
		if err != nil {
			return nil, err
		}
		if live != nil && live.GetAnnotations()[HashAnnotation] == hash && Covers(desired, live) && hasOwner(live.GetOwnerReferences(), owner) {
			return live, nil
		}
		if live != nil && guard != nil {
			if err := guard(live, hash); err != nil {
				return live, err
			}
		}
	}
	return a.applyPatch(ctx, t, desired, manager, force, owner, hash)
}

// applyPatch server-side applies body (stamped with hash, owned by owner).
func (a *Applier) applyPatch(ctx context.Context, t Target, body *unstructured.Unstructured, manager string, force bool, owner metav1.OwnerReference, hash string) (*unstructured.Unstructured, error) {
	Stamp(body, hash)
	body.SetOwnerReferences(withOwner(body.GetOwnerReferences(), owner))
	body.SetResourceVersion("")
	body.SetManagedFields(nil)
	raw, err := json.Marshal(body.Object)
	if err != nil {
		return nil, err
	}
	return a.resource(t).Patch(ctx, t.Name, types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: manager, Force: &force})
}

// serverSideApplyIgnoring is ServerSideApply with serverSideApply.ignoreFields,
// as OCM reads them:
//   - OnSpokePresent fields are set when the object is created, and left out
//     of every apply once it exists (so the field manager lets go of them and
//     whoever else sets them keeps them); they are not part of the manifest
//     hash, so changing them in the manifest changes nothing on the cluster.
//   - OnSpokeChange fields are applied while the manifest changes; as long as
//     it does not (the hash matches), the values the managed cluster gave them
//     stay: they are not looked at when checking drift, and a re-apply that
//     repairs drift elsewhere carries their live values.
func (a *Applier) serverSideApplyIgnoring(ctx context.Context, t Target, desired *unstructured.Unstructured, manager string, force bool, owner metav1.OwnerReference, guard Guard, present, change []workv1.IgnoreField) (*unstructured.Unstructured, error) {
	reducedObj, err := RemoveFields(ctx, desired.DeepCopy().Object, present)
	if err != nil {
		return nil, err
	}
	reduced := &unstructured.Unstructured{Object: reducedObj}
	hash := ManifestHash(reduced)
	coveredObj, err := RemoveFields(ctx, reduced.DeepCopy().Object, change)
	if err != nil {
		return nil, err
	}
	live, err := a.Get(ctx, t)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return a.applyPatch(ctx, t, desired, manager, force, owner, hash)
	}
	unchanged := live.GetAnnotations()[HashAnnotation] == hash
	if unchanged && Covers(&unstructured.Unstructured{Object: coveredObj}, live) && hasOwner(live.GetOwnerReferences(), owner) {
		return live, nil
	}
	if guard != nil {
		if err := guard(live, hash); err != nil {
			return live, err
		}
	}
	body := reduced
	if unchanged && len(change) > 0 {
		liveWithout, err := RemoveFields(ctx, live.DeepCopy().Object, change)
		if err != nil {
			return nil, err
		}
		kept := restoreIgnored(coveredObj, live.DeepCopy().Object, liveWithout).(map[string]interface{})
		delete(kept, "status")
		body = &unstructured.Unstructured{Object: kept}
		body.SetAnnotations(reduced.GetAnnotations())
		body.SetLabels(reduced.GetLabels())
		body.SetOwnerReferences(reduced.GetOwnerReferences())
		body.SetFinalizers(reduced.GetFinalizers())
		meta := body.Object["metadata"].(map[string]interface{})
		for k := range meta {
			switch k {
			case "name", "namespace", "labels", "annotations", "ownerReferences", "finalizers":
			default:
				delete(meta, k)
			}
		}
	}
	return a.applyPatch(ctx, t, body, manager, force, owner, hash)
}

// WaitEstablished waits (up to timeout) until a CustomResourceDefinition just
// applied serves its kinds, then refreshes the mapper, so custom resources
// later in the same work can be applied in the same pass.
func (a *Applier) WaitEstablished(ctx context.Context, crd *unstructured.Unstructured, timeout time.Duration) {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		live, err := a.Client.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err == nil && Established(live) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	a.Mapper.mu.Lock()
	a.Mapper.lastRefresh = time.Time{}
	a.Mapper.mu.Unlock()
	a.Mapper.Refresh()
}

// Established reports whether a CustomResourceDefinition serves its kinds.
func Established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Delete deletes a recorded resource, only if it is still the object that was
// recorded (UID precondition). It reports gone=true once the object no longer
// exists or is a different object now; an object with finalizers may need
// several calls. err is nil when the deletion was issued (or not needed).
func (a *Applier) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, policy metav1.DeletionPropagation) (gone bool, err error) {
	ri := dynamic.ResourceInterface(a.Client.Resource(gvr))
	if namespace != "" {
		ri = a.Client.Resource(gvr).Namespace(namespace)
	}
	absent := func() (bool, bool, error) {
		live, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, false, nil
		}
		if err != nil {
			return false, false, err
		}
		if uid != "" && live.GetUID() != uid {
			return true, false, nil
		}
		return false, live.GetDeletionTimestamp() != nil, nil
	}
	a.forget(gvr.GroupResource(), namespace, name)
	gone, deleting, err := absent()
	if gone || err != nil {
		return gone, err
	}
	if !deleting {
		opts := metav1.DeleteOptions{PropagationPolicy: &policy}
		if uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err = ri.Delete(ctx, name, opts)
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return true, nil
		case err != nil:
			return false, err
		}
	}
	gone, _, err = absent()
	return gone, err
}

// Release removes owner from a recorded resource's ownerReferences, leaving the
// object on the cluster (orphaning it or handing it to its other owners).
func (a *Applier) Release(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, owner types.UID, ownerName string) error {
	ri := dynamic.ResourceInterface(a.Client.Resource(gvr))
	if namespace != "" {
		ri = a.Client.Resource(gvr).Namespace(namespace)
	}
	live, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if uid != "" && live.GetUID() != uid {
		return nil
	}
	refs := live.GetOwnerReferences()
	kept := make([]interface{}, 0, len(refs))
	// An object written before its record existed is released by dropping
	// the annotation that names the record (another record's mark stays).
	mark, marked := live.GetAnnotations()[PendingOwnerAnnotation]
	found := marked && mark == ownerName
	annotations := map[string]interface{}{}
	if found {
		annotations[PendingOwnerAnnotation] = nil
	}
	for _, r := range refs {
		if r.UID == owner {
			found = true
			continue
		}
		kept = append(kept, r)
	}
	if !found {
		return nil
	}
	patch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"ownerReferences": kept, "resourceVersion": live.GetResourceVersion(),
			"annotations": annotations},
	})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func hasOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) bool {
	if owner.UID == "" {
		return true
	}
	for _, r := range refs {
		if r.UID == owner.UID {
			return true
		}
	}
	return false
}

func withOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) []metav1.OwnerReference {
	if owner.UID == "" || hasOwner(refs, owner) {
		return refs
	}
	return append(append([]metav1.OwnerReference(nil), refs...), owner)
}

func mergeOwners(live, desired []metav1.OwnerReference) []metav1.OwnerReference {
	out := append([]metav1.OwnerReference(nil), live...)
	for _, d := range desired {
		if !hasOwner(out, d) {
			out = append(out, d)
		}
	}
	return out
}
