package propagator

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// Encryption of protected values, as Open Cluster Management does it: one
// AES-256 key per cluster in Secret policy-encryption-key (data "key") of the
// cluster namespace, and one initialization vector per replica in its
// encryption-iv annotation.
const (
	EncryptionKeySecret = hubtemplate.KeySecret
	IVAnnotation        = hubtemplate.IVAnnotation
)

// apiSource reads template objects straight from the apiserver (not from a
// cache: the hub does not keep every Secret in memory).
type apiSource struct{ reader client.Reader }

func (s apiSource) Get(ctx context.Context, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	// A cluster-scoped kind ignores the namespace it was asked in: a template
	// confined to the policy's namespace never reads it.
	if ns != "" && u.GetNamespace() != ns {
		return nil, fmt.Errorf("%s %q is cluster-scoped: hub templates read only objects in the policy's namespace %s", kind, name, ns)
	}
	return u, nil
}

// memoSource reads each object once per reconcile: a root resolved for a
// thousand clusters reads its ConfigMap once, not a thousand times.
type memoSource struct {
	src  hubtemplate.Source
	mu   sync.Mutex
	seen map[string]memoEntry
}

type memoEntry struct {
	obj *unstructured.Unstructured
	err error
}

func newMemoSource(src hubtemplate.Source) *memoSource {
	return &memoSource{src: src, seen: map[string]memoEntry{}}
}

func (m *memoSource) Get(ctx context.Context, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	k := apiVersion + " " + refKey(kind, ns, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.seen[k]; ok {
		if e.obj == nil {
			return nil, e.err
		}
		return e.obj.DeepCopy(), e.err
	}
	obj, err := m.src.Get(ctx, apiVersion, kind, ns, name)
	m.seen[k] = memoEntry{obj, err}
	if obj == nil {
		return nil, err
	}
	return obj.DeepCopy(), err
}

// templateRefs remembers which roots read which objects, to resolve them again
// when one changes.
type templateRefs struct {
	mu     sync.Mutex
	byRef  map[string]map[string]bool // "Kind ns/name" -> root keys
	byRoot map[string][]string        // root key -> ref keys
}

func refKey(kind, ns, name string) string { return kind + " " + ns + "/" + name }

func (t *templateRefs) set(root string, refs []hubtemplate.Ref) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRef == nil {
		t.byRef, t.byRoot = map[string]map[string]bool{}, map[string][]string{}
	}
	for _, k := range t.byRoot[root] {
		delete(t.byRef[k], root)
		if len(t.byRef[k]) == 0 {
			delete(t.byRef, k)
		}
	}
	delete(t.byRoot, root)
	for _, r := range refs {
		k := refKey(r.Kind, r.Namespace, r.Name)
		if t.byRef[k] == nil {
			t.byRef[k] = map[string]bool{}
		}
		if !t.byRef[k][root] {
			t.byRef[k][root] = true
			t.byRoot[root] = append(t.byRoot[root], k)
		}
	}
}

// readers maps a Secret, ConfigMap or ManagedCluster to the roots whose
// templates read it.
func (t *templateRefs) readers(kind string) func(context.Context, client.Object) []reconcile.Request {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		t.mu.Lock()
		defer t.mu.Unlock()
		var out []reconcile.Request
		for root := range t.byRef[refKey(kind, o.GetNamespace(), o.GetName())] {
			if ns, name, ok := splitRootKey(root); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
			}
		}
		return out
	}
}

// resolveTemplates resolves the hub templates of want (a replica) for its
// cluster in place. A template that fails keeps its unresolved definition and
// gets the error in its hub-templates-error annotation, as OCM delivers it;
// the errors are returned by template name. live is the current replica, whose
// initialization vector is kept.
func (r *Reconciler) resolveTemplates(ctx context.Context, src hubtemplate.Source, root, want, live *policyv1.Policy, refs *[]hubtemplate.Ref) (map[string]string, error) {
	any, needsKey := false, false
	for _, t := range want.Spec.PolicyTemplates {
		if t != nil && hubtemplate.HasTemplates(t.ObjectDefinition.Raw) {
			any = true
			needsKey = needsKey || hubtemplate.NeedsKey(t.ObjectDefinition.Raw)
		}
	}
	if !any {
		return nil, nil
	}
	cluster := want.Namespace
	var mc clusterv1.ManagedCluster
	if err := r.Get(ctx, client.ObjectKey{Name: cluster}, &mc); err != nil {
		return nil, fmt.Errorf("get ManagedCluster %s for its hub templates: %w", cluster, err)
	}
	opts := hubtemplate.Options{Namespace: root.Namespace, Cluster: &mc, Source: src}
	if needsKey {
		key, err := r.encryptionKey(ctx, cluster)
		if err != nil {
			return nil, err
		}
		iv, err := replicaIV(live)
		if err != nil {
			return nil, err
		}
		opts.Key, opts.IV = key, iv
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[IVAnnotation] = base64.StdEncoding.EncodeToString(iv)
	}
	failed := map[string]string{}
	for _, t := range want.Spec.PolicyTemplates {
		if t == nil || !hubtemplate.HasTemplates(t.ObjectDefinition.Raw) {
			continue
		}
		out, read, err := hubtemplate.Resolve(ctx, t.ObjectDefinition.Raw, opts)
		*refs = append(*refs, read...)
		if err == nil {
			t.ObjectDefinition.Raw = out
			continue
		}
		var obj unstructured.Unstructured
		if jerr := json.Unmarshal(t.ObjectDefinition.Raw, &obj.Object); jerr != nil {
			failed["(unnamed)"] = err.Error()
			continue
		}
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[hubtemplate.ErrorAnnotation] = err.Error()
		obj.SetAnnotations(ann)
		if raw, jerr := json.Marshal(obj.Object); jerr == nil {
			t.ObjectDefinition.Raw = raw
		}
		failed[obj.GetName()] = err.Error()
	}
	return failed, nil
}

// replicaIV returns the live replica's initialization vector, or a new one.
func replicaIV(live *policyv1.Policy) ([]byte, error) {
	if live != nil {
		if v, err := base64.StdEncoding.DecodeString(live.Annotations[IVAnnotation]); err == nil && len(v) == hubtemplate.IVSize {
			return v, nil
		}
	}
	iv := make([]byte, hubtemplate.IVSize)
	_, err := rand.Read(iv)
	return iv, err
}

// encryptionKey returns the cluster's key, creating its Secret on first use.
func (r *Reconciler) encryptionKey(ctx context.Context, cluster string) ([]byte, error) {
	var s corev1.Secret
	err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: cluster, Name: EncryptionKeySecret}, &s)
	if err == nil && len(s.Data["key"]) == 32 {
		return s.Data["key"], nil
	}
	if err == nil {
		return nil, fmt.Errorf("Secret %s/%s holds no 256-bit AES key in data.key", cluster, EncryptionKeySecret)
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get Secret %s/%s: %w", cluster, EncryptionKeySecret, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: EncryptionKeySecret, Namespace: cluster}, Data: map[string][]byte{"key": key}}
	if err := r.Create(ctx, &s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return r.encryptionKey(ctx, cluster)
		}
		return nil, fmt.Errorf("create Secret %s/%s: %w", cluster, EncryptionKeySecret, err)
	}
	return key, nil
}

// templateErrorStatus is the replica status that reports hub template errors
// (until the spoke reports its own).
func templateErrorStatus(failed map[string]string, now metav1.Time) policyv1.PolicyStatus {
	st := policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant}
	names := make([]string, 0, len(failed))
	for name := range failed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		msg := failed[name]
		st.Details = append(st.Details, &policyv1.DetailsPerTemplate{
			TemplateMeta:    metav1.ObjectMeta{Name: name},
			ComplianceState: policyv1.NonCompliant,
			History: []policyv1.ComplianceHistory{{LastTimestamp: now,
				Message: templateErrorPrefix + msg}},
		})
	}
	return st
}

// sameTemplateErrors reports whether a replica's status already reports
// these template errors: NonCompliant, and each failed template's newest
// history entry is its error. The spoke's own report (which also lists the
// templates that resolved) qualifies, so the hub and the spoke never take
// turns rewriting it.
func sameTemplateErrors(st policyv1.PolicyStatus, want policyv1.PolicyStatus) bool {
	if st.ComplianceState != want.ComplianceState {
		return false
	}
	got := map[string]*policyv1.DetailsPerTemplate{}
	for _, d := range st.Details {
		if d != nil {
			got[d.TemplateMeta.Name] = d
		}
	}
	for _, d := range want.Details {
		g := got[d.TemplateMeta.Name]
		if g == nil || len(g.History) == 0 || g.History[0].Message != d.History[0].Message {
			return false
		}
	}
	return true
}

const templateErrorPrefix = "NonCompliant; violation - Error occurred while processing hub-templates: "

// isTemplateErrorStatus reports whether st is a status the propagator wrote for
// hub template errors (and no spoke has reported since).
func isTemplateErrorStatus(st policyv1.PolicyStatus) bool {
	if st.ComplianceState != policyv1.NonCompliant || len(st.Details) == 0 {
		return false
	}
	for _, d := range st.Details {
		if d == nil || len(d.History) == 0 || !strings.HasPrefix(d.History[0].Message, templateErrorPrefix) {
			return false
		}
	}
	return true
}
