package live

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/gatekeeper"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Options configure Start.
type Options struct {
	// Config reaches the cluster. Required.
	Config *rest.Config
	// InstallTemplateCRD installs the ConstraintTemplate CRD when the
	// cluster has none (no Gatekeeper). Default false: the runner then
	// needs the CRD to exist.
	InstallTemplateCRD bool
	// RetryInterval is when a constraint whose kinds the cluster does not
	// serve (or may not be listed) is tried again. Default 30s.
	RetryInterval time.Duration
	// SyncTimeout bounds the wait for a new watch to sync. Default 30s.
	SyncTimeout time.Duration
	// Log receives progress and errors. Default: logr.Discard().
	Log logr.Logger
	// EventSource is the component on compliance events. Default "flotilla-policy".
	EventSource string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Runner is a running audit. Create it with Start.
type Runner struct {
	opts   Options
	dyn    dynamic.Interface
	kube   kubernetes.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	queue  workqueue.TypedRateLimitingInterface[string]
	log    logr.Logger
	ctx    context.Context

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer

	// Touched by the worker only.
	engine      *gatekeeper.Engine
	constraints map[string]*constraintState // by Kind/name
	templates   map[string]string           // constraint kind -> template name
}

// constraintState is what the runner knows of one constraint.
type constraintState struct {
	c         *gatekeeper.Constraint
	gvr       schema.GroupVersionResource
	resources map[schema.GroupVersionResource]schema.GroupVersionKind
	// synced are the kinds its template's requires-sync-data names (a
	// referential template only): kept in the inventory, a change to one
	// audits the constraint again in full.
	synced map[schema.GroupVersionResource]schema.GroupVersionKind
	// byObject are the violations of each matching object (key: gvr|ns/name).
	byObject map[string][]gatekeeper.ObjectViolation
	err      error
	written  string // the last status message written
}

// Start starts the audit in the background until ctx ends; it returns once
// the ConstraintTemplate watch has synced.
func Start(ctx context.Context, opts Options) (*Runner, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("gatekeeper live: Options.Config is required")
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 30 * time.Second
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.EventSource == "" {
		opts.EventSource = "flotilla-policy"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	if opts.InstallTemplateCRD {
		if err := InstallTemplateCRD(ctx, dyn); err != nil {
			return nil, err
		}
	}
	r := &Runner{
		opts: opts, dyn: dyn, kube: kube, log: opts.Log, ctx: ctx,
		mapper:      restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		informers:   map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		engine:      gatekeeper.NewEngine(),
		constraints: map[string]*constraintState{},
		templates:   map[string]string{},
	}
	if _, err := dyn.Resource(TemplatesGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("cannot list ConstraintTemplates (is the CRD installed? `flotilla policy run --install-crds` installs it): %w", err)
	}
	if _, err := r.watch(TemplatesGVR, func(obj *unstructured.Unstructured) { r.queue.Add("t|" + obj.GetName()) }); err != nil {
		return nil, err
	}
	if _, err := r.watch(namespacesGVR, func(obj *unstructured.Unstructured) {
		r.queue.Add(objectKey(namespacesGVR, obj.GetNamespace(), obj.GetName()))
		r.queue.Add("n|")
	}); err != nil {
		return nil, err
	}
	go r.work()
	go func() { <-ctx.Done(); r.queue.ShutDown() }()
	return r, nil
}

// watch starts (once) and syncs the informer of gvr; on calls onChange for
// every added, updated or deleted object.
func (r *Runner) watch(gvr schema.GroupVersionResource, onChange func(*unstructured.Unstructured)) (cache.SharedIndexInformer, error) {
	r.mu.Lock()
	inf, ok := r.informers[gvr]
	if !ok {
		inf = dynamicinformer.NewFilteredDynamicInformer(r.dyn, gvr, "", 0, cache.Indexers{}, nil).Informer()
		handle := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				onChange(u)
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: handle,
			UpdateFunc: func(old, cur any) {
				o, c := old.(*unstructured.Unstructured), cur.(*unstructured.Unstructured)
				// Status writes (ours included) do not change what is audited.
				if o.GetGeneration() != 0 && o.GetGeneration() == c.GetGeneration() && equalLabels(o.GetLabels(), c.GetLabels()) &&
					(gvr.Group == gatekeeper.ConstraintGroup || gvr == TemplatesGVR) {
					return
				}
				handle(cur)
			},
			DeleteFunc: handle,
		})
		r.informers[gvr] = inf
		go inf.Run(r.ctx.Done())
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the watch of %s did not sync within %s (may the engine list and watch it?)", gvr.GroupResource(), r.opts.SyncTimeout)
	}
	return inf, nil
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func objectKey(gvr schema.GroupVersionResource, ns, name string) string {
	return "o|" + gvr.Group + "|" + gvr.Version + "|" + gvr.Resource + "|" + ns + "|" + name
}

func (r *Runner) work() {
	for {
		key, quit := r.queue.Get()
		if quit {
			return
		}
		if err := r.handleSafely(key); err != nil {
			r.log.Error(err, "gatekeeper audit", "key", key)
			r.queue.AddAfter(key, r.opts.RetryInterval)
		}
		r.queue.Forget(key)
		r.queue.Done(key)
	}
}

func (r *Runner) handleSafely(key string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic (a bug; please report it with this log): %v\n%s", p, debug.Stack())
		}
	}()
	parts := strings.Split(key, "|")
	switch parts[0] {
	case "t":
		return r.syncTemplate(parts[1])
	case "c":
		return r.syncConstraint(parts[1], parts[2])
	case "o":
		gvr := schema.GroupVersionResource{Group: parts[1], Version: parts[2], Resource: parts[3]}
		return r.objectChanged(gvr, parts[4], parts[5])
	case "n":
		for id, st := range r.constraints {
			if st.c != nil && st.c.Match.NamespaceSelector != nil {
				r.queue.Add("c|" + strings.Replace(id, "/", "|", 1))
			}
		}
	}
	return nil
}

func (r *Runner) store(gvr schema.GroupVersionResource) cache.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	if inf, ok := r.informers[gvr]; ok {
		return inf.GetStore()
	}
	return nil
}

func (r *Runner) get(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	s := r.store(gvr)
	if s == nil {
		return nil
	}
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	obj, ok, _ := s.GetByKey(key)
	if !ok {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

func constraintGVR(kind string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: gatekeeper.ConstraintGroup, Version: "v1beta1", Resource: strings.ToLower(kind)}
}

// syncTemplate compiles a template, creates its constraint kind's CRD,
// watches its constraints and writes its status.
func (r *Runner) syncTemplate(name string) error {
	obj := r.get(TemplatesGVR, "", name)
	if obj == nil {
		for kind, tn := range r.templates {
			if tn == name {
				delete(r.templates, kind)
				r.engine.RemoveTemplate(kind)
				r.requeueConstraints(kind)
			}
		}
		return nil
	}
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "crd", "spec", "names", "kind")
	_, compileErr := r.engine.AddTemplate(r.ctx, obj)
	if kind != "" {
		r.templates[kind] = name
	}
	if err := r.writeTemplateStatus(obj, compileErr); err != nil {
		return err
	}
	if kind == "" {
		return nil
	}
	if err := ensureCRD(r.ctx, r.dyn, ConstraintCRD(kind)); err != nil {
		return err
	}
	gvr := constraintGVR(kind)
	if _, err := r.watch(gvr, func(c *unstructured.Unstructured) { r.queue.Add("c|" + kind + "|" + c.GetName()) }); err != nil {
		r.mapper.Reset()
		return err
	}
	r.requeueConstraints(kind)
	return nil
}

func (r *Runner) requeueConstraints(kind string) {
	if s := r.store(constraintGVR(kind)); s != nil {
		for _, o := range s.List() {
			r.queue.Add("c|" + kind + "|" + o.(*unstructured.Unstructured).GetName())
		}
	}
}

func (r *Runner) writeTemplateStatus(obj *unstructured.Unstructured, compileErr error) error {
	status := map[string]any{"created": compileErr == nil}
	if compileErr != nil {
		status["byPod"] = []any{map[string]any{
			"id":     r.opts.EventSource,
			"errors": []any{map[string]any{"code": "ingest_error", "message": compileErr.Error()}},
		}}
	}
	old, _, _ := unstructured.NestedMap(obj.Object, "status")
	if fmt.Sprint(old) == fmt.Sprint(status) {
		return nil
	}
	c := obj.DeepCopy()
	c.Object["status"] = status
	_, err := r.dyn.Resource(TemplatesGVR).UpdateStatus(r.ctx, c, metav1.UpdateOptions{FieldManager: "flotilla-policy"})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // a newer version is queued
	}
	return err
}

// syncConstraint parses a constraint, watches the kinds it matches and
// audits it in full.
func (r *Runner) syncConstraint(kind, name string) error {
	id := kind + "/" + name
	gvr := constraintGVR(kind)
	obj := r.get(gvr, "", name)
	if obj == nil {
		delete(r.constraints, id)
		return nil
	}
	st := &constraintState{gvr: gvr, resources: map[schema.GroupVersionResource]schema.GroupVersionKind{},
		synced: map[schema.GroupVersionResource]schema.GroupVersionKind{}, byObject: map[string][]gatekeeper.ObjectViolation{}}
	if old := r.constraints[id]; old != nil {
		st.written = old.written
	}
	r.constraints[id] = st
	c, err := gatekeeper.ParseConstraint(obj)
	if err != nil {
		st.err = err
		return r.writeStatus(st, obj)
	}
	st.c = c
	tmpl, err := r.engine.Template(kind)
	if err != nil {
		st.err = err
		return r.writeStatus(st, obj)
	}
	kinds, retry := r.matchedKinds(st)
	for _, gvk := range kinds {
		m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			st.err = fmt.Errorf("constraint %s: the kind %s is not served by this cluster", id, gvk.Kind)
			retry = true
			break
		}
		res := m.Resource
		st.resources[res] = m.GroupVersionKind
		if _, err := r.watch(res, func(o *unstructured.Unstructured) {
			r.queue.Add(objectKey(res, o.GetNamespace(), o.GetName()))
		}); err != nil {
			st.err = fmt.Errorf("constraint %s: %w", id, err)
			retry = true
			break
		}
	}
	if st.err == nil && tmpl.Referential {
		retry = r.watchSynced(st, tmpl) || retry
	}
	if st.err == nil && tmpl.Referential {
		st.err = r.fillInventory(st)
	}
	if st.err == nil {
		r.auditFull(st)
	}
	if err := r.writeStatus(st, obj); err != nil {
		return err
	}
	if retry {
		r.mapper.Reset()
		r.queue.AddAfter("c|"+kind+"|"+name, r.opts.RetryInterval)
	}
	return nil
}

// watchSynced watches the kinds the template's requires-sync-data names, as
// Gatekeeper syncs them into data.inventory. A kind the cluster does not
// serve fails the constraint (its audit would miss objects) and sets retry.
func (r *Runner) watchSynced(st *constraintState, tmpl *gatekeeper.Template) (retry bool) {
	for _, k := range tmpl.SyncKinds {
		parts := strings.SplitN(k, "/", 3)
		if len(parts) != 3 {
			continue
		}
		m, err := r.mapper.RESTMapping(schema.GroupKind{Group: parts[0], Kind: parts[2]}, parts[1])
		if err != nil {
			st.err = fmt.Errorf("constraint %s: the kind %s (group %q, version %s) its template %s syncs into data.inventory (requires-sync-data) is not served by this cluster",
				st.c.ID(), parts[2], parts[0], parts[1], tmpl.Name)
			return true
		}
		res := m.Resource
		if _, ok := st.resources[res]; ok {
			continue
		}
		if _, err := r.watch(res, func(o *unstructured.Unstructured) {
			r.queue.Add(objectKey(res, o.GetNamespace(), o.GetName()))
		}); err != nil {
			st.err = fmt.Errorf("constraint %s: %w", st.c.ID(), err)
			return true
		}
		st.synced[res] = m.GroupVersionKind
	}
	return false
}

// fillInventory puts every object of the kinds a referential constraint
// matches or syncs into data.inventory, so its first audit sees them all
// (their watch events keep the inventory after that).
func (r *Runner) fillInventory(st *constraintState) error {
	for _, kinds := range []map[schema.GroupVersionResource]schema.GroupVersionKind{st.resources, st.synced} {
		for gvr := range kinds {
			s := r.store(gvr)
			if s == nil {
				continue
			}
			for _, o := range s.List() {
				if err := r.engine.Inventory().Put(r.ctx, o.(*unstructured.Unstructured)); err != nil {
					return fmt.Errorf("constraint %s: data.inventory: %w", st.c.ID(), err)
				}
			}
		}
	}
	return nil
}

// matchedKinds resolves match.kinds to served kinds; "*" is refused (it
// would mean watching every kind of the cluster).
// A kind the cluster does not serve sets retry.
func (r *Runner) matchedKinds(st *constraintState) (out []schema.GroupVersionKind, retry bool) {
	if len(st.c.Match.Kinds) == 0 {
		st.err = fmt.Errorf("constraint %s: match.kinds is empty (every kind): name the kinds to audit", st.c.ID())
		return nil, false
	}
	for _, k := range st.c.Match.Kinds {
		groups := k.APIGroups
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, g := range groups {
			for _, kind := range k.Kinds {
				if g == "*" || kind == "*" {
					st.err = fmt.Errorf("constraint %s: match.kinds with \"*\" is not supported without Gatekeeper: name the groups and kinds", st.c.ID())
					return nil, false
				}
				m, err := r.mapper.RESTMapping(schema.GroupKind{Group: g, Kind: kind})
				if err != nil {
					st.err = fmt.Errorf("constraint %s: the kind %s (group %q) is not served by this cluster", st.c.ID(), kind, g)
					return nil, true
				}
				out = append(out, m.GroupVersionKind)
			}
		}
	}
	return out, false
}

func (r *Runner) nsLabels(obj *unstructured.Unstructured) map[string]string {
	ns := obj.GetNamespace()
	if ns == "" {
		if obj.GetKind() == "Namespace" {
			return obj.GetLabels()
		}
		return nil
	}
	n := r.get(namespacesGVR, "", ns)
	if n == nil {
		return nil
	}
	if l := n.GetLabels(); l != nil {
		return l
	}
	return map[string]string{}
}

// review evaluates one object against a constraint, recording the result.
func (r *Runner) review(st *constraintState, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	key := objectKey(gvr, obj.GetNamespace(), obj.GetName())
	delete(st.byObject, key)
	o, err := gatekeeper.NewObject(obj, r.nsLabels(obj))
	if err != nil {
		return err
	}
	if !st.c.Matches(o) {
		return nil
	}
	vs, err := r.engine.Review(r.ctx, st.c, o)
	if err != nil {
		return err
	}
	list := make([]gatekeeper.ObjectViolation, 0, len(vs))
	for _, v := range vs {
		list = append(list, gatekeeper.ObjectViolation{Object: o.Ref, Message: v.Message})
	}
	st.byObject[key] = list
	return nil
}

// auditFull evaluates every object of the kinds the constraint matches.
func (r *Runner) auditFull(st *constraintState) {
	st.byObject = map[string][]gatekeeper.ObjectViolation{}
	st.err = nil
	for gvr := range st.resources {
		s := r.store(gvr)
		if s == nil {
			continue
		}
		for _, o := range s.List() {
			if err := r.review(st, gvr, o.(*unstructured.Unstructured)); err != nil {
				st.err = fmt.Errorf("%s: %w", st.c.ID(), err)
				return
			}
		}
	}
}

// objectChanged keeps the inventory and re-evaluates the object against the
// constraints matching its kind.
func (r *Runner) objectChanged(gvr schema.GroupVersionResource, ns, name string) error {
	obj := r.get(gvr, ns, name)
	var gvk schema.GroupVersionKind
	for _, st := range r.constraints {
		if k, ok := st.resources[gvr]; ok {
			gvk = k
		}
		if k, ok := st.synced[gvr]; ok {
			gvk = k
		}
	}
	if gvk.Kind != "" {
		if obj != nil {
			if err := r.engine.Inventory().Put(r.ctx, obj); err != nil {
				return err
			}
		} else {
			gone := &unstructured.Unstructured{}
			gone.SetGroupVersionKind(gvk)
			gone.SetNamespace(ns)
			gone.SetName(name)
			if err := r.engine.Inventory().Delete(r.ctx, gone); err != nil {
				return err
			}
		}
	}
	for id, st := range r.constraints {
		_, matched := st.resources[gvr]
		_, synced := st.synced[gvr]
		if !matched && !synced || st.c == nil {
			continue
		}
		t, err := r.engine.Template(st.c.Kind)
		if err != nil {
			continue
		}
		switch {
		case t.Referential:
			r.auditFull(st)
		case obj == nil:
			delete(st.byObject, objectKey(gvr, ns, name))
		default:
			if err := r.review(st, gvr, obj); err != nil {
				st.err = fmt.Errorf("%s: %w", id, err)
			}
		}
		if c := r.get(st.gvr, "", st.c.Name); c != nil {
			if err := r.writeStatus(st, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// result folds the per-object violations into a gatekeeper.Result.
func (st *constraintState) result() gatekeeper.Result {
	res := gatekeeper.Result{Err: st.err, Audited: len(st.byObject)}
	if st.c != nil {
		res.Constraint, res.Action = st.c.ID(), st.c.Action
	}
	for _, vs := range st.byObject {
		res.Violations = append(res.Violations, vs...)
	}
	gatekeeper.SortViolations(res.Violations)
	return res
}

// MaxStatusViolations bounds status.violations, as Gatekeeper's audit does
// by default.
const MaxStatusViolations = 20

// writeStatus writes the constraint's status and a compliance event when
// its message changed.
func (r *Runner) writeStatus(st *constraintState, obj *unstructured.Unstructured) error {
	res := st.result()
	state, msg := res.Compliance()
	if msg == st.written {
		return nil
	}
	violations := []any{}
	for i, v := range res.Violations {
		if i == MaxStatusViolations {
			break
		}
		gv, _ := schema.ParseGroupVersion(v.Object.APIVersion)
		violations = append(violations, map[string]any{
			"enforcementAction": res.Action, "group": gv.Group, "version": gv.Version, "kind": v.Object.Kind,
			"namespace": v.Object.Namespace, "name": v.Object.Name, "message": v.Message,
		})
	}
	c := obj.DeepCopy()
	c.Object["status"] = map[string]any{
		"auditTimestamp":  r.opts.Now().UTC().Format(time.RFC3339),
		"totalViolations": int64(len(res.Violations)),
		"violations":      violations,
		"compliant":       string(state),
		"message":         msg,
	}
	if _, err := r.dyn.Resource(st.gvr).UpdateStatus(r.ctx, c, metav1.UpdateOptions{FieldManager: "flotilla-policy"}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if apierrors.IsConflict(err) {
			fresh, gerr := r.dyn.Resource(st.gvr).Get(r.ctx, obj.GetName(), metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			c.SetResourceVersion(fresh.GetResourceVersion())
			if _, err = r.dyn.Resource(st.gvr).UpdateStatus(r.ctx, c, metav1.UpdateOptions{FieldManager: "flotilla-policy"}); err != nil {
				return err
			}
		} else {
			return err
		}
	}
	st.written = msg
	r.event(obj, state, msg)
	return nil
}

// event records a compliance event on the constraint (in namespace
// default, as events of cluster-scoped objects are).
func (r *Runner) event(obj *unstructured.Unstructured, state policyv1.ComplianceState, msg string) {
	typ, kind := corev1.EventTypeNormal, "notification"
	if state != policyv1.Compliant {
		typ, kind = corev1.EventTypeWarning, "violation"
	}
	now := metav1.NewTime(r.opts.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(obj.GetKind()) + "." + obj.GetName() + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		Reason:  "policy: " + obj.GetKind() + "/" + obj.GetName(),
		Message: fmt.Sprintf("%s; %s - %s", state, kind, msg),
		Type:    typ, Source: corev1.EventSource{Component: r.opts.EventSource},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := r.kube.CoreV1().Events(metav1.NamespaceDefault).Create(r.ctx, ev, metav1.CreateOptions{}); err != nil {
		r.log.Error(err, "recording a compliance event", "constraint", obj.GetKind()+"/"+obj.GetName())
	}
}
