package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/watchguard"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// RunFrameworkAgent runs the governance-policy-framework agent until ctx
// ends. With its own hub credential it watches the replicas in its cluster's
// namespace on the hub and, on the managed cluster:
//   - spec sync: keeps a copy of each replica in the same-named namespace
//     (created if missing), and removes copies whose replica is gone;
//   - template sync: creates, updates and removes the ConfigurationPolicies
//     a replica carries (owned by the copy, labelled PolicyLabel, with the
//     replica's remediationAction winning); a template whose dependencies
//     are not met is not created and reports Pending;
//   - status sync: writes the replica's status (details with the compliance
//     events as history, newest first, at most MaxHistory; compliant) on the
//     copy and on the hub replica, and forwards every compliance event to
//     the hub as an event on the replica (HubEvents), so that the hub's
//     history misses none however many come between two of its looks.
//
// Everything is driven by watches on both sides.
func RunFrameworkAgent(ctx context.Context, o AgentOptions) error {
	if err := o.defaults(FrameworkName); err != nil {
		return err
	}
	return runWithCredential(ctx, FrameworkName, o, func(ctx context.Context, hubCfg *rest.Config) error {
		// Its caches follow the replicas on both sides: a watch that died
		// on either starts the agent again, listed afresh.
		policies := policyv1.GroupVersion.WithResource("policies")
		probes := []watchguard.Probe{
			{Name: "hub", Config: hubCfg, Resource: policies, Namespace: o.ClusterName},
			{Name: "cluster", Config: o.SpokeConfig, Resource: policies, Namespace: o.ClusterName},
		}
		return watchguard.Run(ctx, o.Log, probes, func(ctx context.Context) error {
			return runFramework(ctx, o, hubCfg)
		})
	})
}

type syncer struct {
	o            AgentOptions
	ns           string
	hub, spoke   client.Client // writes
	hubC, spokeC cache.Cache   // reads
	queue        workqueue.TypedRateLimitingInterface[string]
	dyn          dynamic.Interface // the managed cluster's, for Gatekeeper objects
	// gkInformers watch the delivered Gatekeeper objects (worker only).
	gkInformers map[schema.GroupVersionResource]toolscache.SharedIndexInformer
	// lagging: since when a policy's template state has been ahead of its
	// compliance events (worker only).
	lagging map[string]time.Time
	// forwarded: per policy, the names of the hub events already forwarded
	// that the managed cluster still holds (worker only).
	forwarded map[string]map[string]bool
}

// maxEventLag is how long status sync waits for the compliance event that
// follows a template's new state before writing the status anyway.
const maxEventLag = 10 * time.Second

func runFramework(ctx context.Context, o AgentOptions, hubCfg *rest.Config) error {
	s := scheme.New()
	ns := o.ClusterName
	// The cache's watches get no client timeout: an http.Client timeout
	// ends every watch when it runs out. Its writes do.
	one := cache.Options{Scheme: s, DefaultNamespaces: map[string]cache.Config{ns: {}}}
	hubC, err := cache.New(hubCfg, one)
	if err != nil {
		return err
	}
	spokeC, err := cache.New(o.SpokeConfig, one)
	if err != nil {
		return err
	}
	hubCfg = rest.CopyConfig(hubCfg)
	hubCfg.Timeout = 15 * time.Second
	hub, err := client.New(hubCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	spoke, err := client.New(o.SpokeConfig, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	y := &syncer{o: o, ns: ns, hub: hub, spoke: spoke, hubC: hubC, spokeC: spokeC, dyn: dyn,
		gkInformers: map[schema.GroupVersionResource]toolscache.SharedIndexInformer{}, lagging: map[string]time.Time{},
		forwarded: map[string]map[string]bool{},
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer y.queue.ShutDown()

	handler := func(keys func(obj any) []string) toolscache.ResourceEventHandler {
		add := func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			for _, k := range keys(obj) {
				y.queue.Add(k)
			}
		}
		return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, cur any) { add(cur) }, DeleteFunc: add}
	}
	self := func(obj any) []string {
		if m, ok := obj.(metav1.Object); ok {
			return []string{m.GetName()}
		}
		return nil
	}
	inf, err := hubC.GetInformer(ctx, &policyv1.Policy{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(self)); err != nil {
		return err
	}
	// A spoke replica's change may meet another's dependency: look at all.
	inf, err = spokeC.GetInformer(ctx, &policyv1.Policy{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(func(obj any) []string { return y.allReplicas(ctx, self(obj)) })); err != nil {
		return err
	}
	inf, err = spokeC.GetInformer(ctx, &policyv1.ConfigurationPolicy{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(func(obj any) []string {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil
		}
		if p := m.GetLabels()[PolicyLabel]; p != "" {
			return []string{p}
		}
		return y.allReplicas(ctx, nil) // maybe another template's dependency
	})); err != nil {
		return err
	}
	inf, err = spokeC.GetInformer(ctx, &corev1.Event{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(func(obj any) []string {
		if e, ok := obj.(*corev1.Event); ok && e.InvolvedObject.Kind == "Policy" && strings.HasPrefix(e.Reason, "policy: ") {
			return []string{e.InvolvedObject.Name}
		}
		return nil
	})); err != nil {
		return err
	}
	go func() { _ = hubC.Start(ctx) }()
	go func() { _ = spokeC.Start(ctx) }()
	if !hubC.WaitForCacheSync(ctx) || !spokeC.WaitForCacheSync(ctx) {
		return fmt.Errorf("the watches on the hub and the managed cluster did not sync")
	}
	o.Log.Info("syncing policies", "namespace", ns)
	// Copies whose replica went while the agent was away.
	for _, k := range y.allReplicas(ctx, nil) {
		y.queue.Add(k)
	}
	go func() { <-ctx.Done(); y.queue.ShutDown() }()
	for {
		key, quit := y.queue.Get()
		if quit {
			return nil
		}
		if err := y.sync(ctx, key); err != nil {
			if apierrors.IsConflict(err) {
				o.Log.V(1).Info("sync policy again: it changed meanwhile", "policy", key)
			} else if ctx.Err() == nil {
				o.Log.Error(err, "sync policy", "policy", key)
			}
			y.queue.AddRateLimited(key)
		} else {
			y.queue.Forget(key)
		}
		y.queue.Done(key)
	}
}

// allReplicas is every replica name known on either side, plus extra.
func (y *syncer) allReplicas(ctx context.Context, extra []string) []string {
	keys := append([]string(nil), extra...)
	for _, c := range []cache.Cache{y.hubC, y.spokeC} {
		var l policyv1.PolicyList
		if err := c.List(ctx, &l, client.InNamespace(y.ns)); err == nil {
			for _, p := range l.Items {
				keys = append(keys, p.Name)
			}
		}
	}
	return keys
}

func (y *syncer) sync(ctx context.Context, name string) error {
	key := client.ObjectKey{Namespace: y.ns, Name: name}
	var rep policyv1.Policy
	err := y.hubC.Get(ctx, key, &rep)
	if apierrors.IsNotFound(err) {
		return y.remove(ctx, name)
	}
	if err != nil {
		return err
	}
	if _, ok := rep.Labels[policyv1.RootPolicyLabel]; !ok {
		return nil // not a replica
	}
	local, err := y.specSync(ctx, &rep)
	if err != nil {
		return err
	}
	states, err := y.templateSync(ctx, &rep, local)
	if err != nil {
		return err
	}
	return y.statusSync(ctx, &rep, local, states)
}

// remove deletes the copy of a replica that is gone from the hub, and its templates.
func (y *syncer) remove(ctx context.Context, name string) error {
	delete(y.forwarded, name)
	var local policyv1.Policy
	err := y.spokeC.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, &local)
	if err == nil {
		if _, ok := local.Labels[policyv1.RootPolicyLabel]; !ok {
			return nil // someone else's policy
		}
		if err := y.spoke.Delete(ctx, &local); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		y.o.Log.Info("removed policy whose replica is gone", "policy", name)
		if err := y.pruneGatekeeper(ctx, name, nil); err != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	return y.pruneTemplates(ctx, name, nil)
}

func (y *syncer) pruneTemplates(ctx context.Context, policy string, keep map[string]bool) error {
	var l policyv1.ConfigurationPolicyList
	if err := y.spokeC.List(ctx, &l, client.InNamespace(y.ns), client.MatchingLabels{PolicyLabel: policy}); err != nil {
		return err
	}
	for i := range l.Items {
		if keep[l.Items[i].Name] {
			continue
		}
		if err := y.spoke.Delete(ctx, &l.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// specSync makes the copy of rep on the managed cluster.
func (y *syncer) specSync(ctx context.Context, rep *policyv1.Policy) (*policyv1.Policy, error) {
	var local policyv1.Policy
	err := y.spokeC.Get(ctx, client.ObjectKeyFromObject(rep), &local)
	if apierrors.IsNotFound(err) {
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: y.ns}}
		if err := y.spoke.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create namespace %s on the managed cluster: %w", y.ns, err)
		}
		local = policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: rep.Name, Namespace: y.ns,
			Labels: rep.Labels, Annotations: rep.Annotations}, Spec: rep.Spec}
		if err := y.spoke.Create(ctx, &local); err != nil {
			return nil, fmt.Errorf("create policy %s/%s on the managed cluster: %w", y.ns, rep.Name, err)
		}
		return &local, nil
	}
	if err != nil {
		return nil, err
	}
	if equality.Semantic.DeepEqual(local.Spec, rep.Spec) && reflect.DeepEqual(local.Labels, rep.Labels) && reflect.DeepEqual(local.Annotations, rep.Annotations) {
		return &local, nil
	}
	local = *local.DeepCopy()
	local.Spec, local.Labels, local.Annotations = rep.Spec, rep.Labels, rep.Annotations
	if err := y.spoke.Update(ctx, &local); err != nil {
		return nil, fmt.Errorf("update policy %s/%s on the managed cluster: %w", y.ns, rep.Name, err)
	}
	return &local, nil
}

// templateSync creates and updates the templates of local, removes the ones
// it no longer carries, and returns each template's state.
func (y *syncer) templateSync(ctx context.Context, rep, local *policyv1.Policy) ([]TemplateState, error) {
	rootNs := strings.SplitN(rep.Labels[policyv1.RootPolicyLabel], ".", 2)[0]
	keep, keepGK := map[string]bool{}, map[string]bool{}
	var states []TemplateState
	for i, t := range local.Spec.PolicyTemplates {
		if t == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(t.ObjectDefinition.Raw, &u.Object); err != nil || u.GetName() == "" {
			y.event(ctx, local, fmt.Sprintf("template-%d", i), policyv1.NonCompliant,
				fmt.Sprintf("NonCompliant; template-error; policy-templates[%d] is not an object with a name", i))
			states = append(states, TemplateState{Name: fmt.Sprintf("template-%d", i), Compliance: policyv1.NonCompliant})
			continue
		}
		name := u.GetName()
		if IsGatekeeper(u) {
			keepGK[u.GetKind()+"/"+name] = true
			if msg := u.GetAnnotations()[hubtemplate.ErrorAnnotation]; msg != "" {
				y.event(ctx, local, name, policyv1.NonCompliant, HubTemplateErrorPrefix+msg)
				states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
				continue
			}
			if hubtemplate.HasProtected(t.ObjectDefinition.Raw) {
				plain, err := y.decrypt(ctx, local, u.Object)
				if err != nil {
					y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
					states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
					continue
				}
				u.Object = plain
			}
			st := y.syncGatekeeper(ctx, local, u)
			st.IgnorePending = t.IgnorePending
			states = append(states, st)
			continue
		}
		keep[name] = true
		if u.GetKind() != "ConfigurationPolicy" {
			y.event(ctx, local, name, policyv1.NonCompliant, fmt.Sprintf("NonCompliant; template-error; kind %s is not supported (only ConfigurationPolicy and Gatekeeper ConstraintTemplates and constraints)", u.GetKind()))
			states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
			continue
		}
		if msg := u.GetAnnotations()[hubtemplate.ErrorAnnotation]; msg != "" {
			// The hub could not resolve its templates: report it, create nothing.
			if err := y.deleteTemplate(ctx, name); err != nil {
				return nil, err
			}
			y.event(ctx, local, name, policyv1.NonCompliant, HubTemplateErrorPrefix+msg)
			states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
			continue
		}
		st := TemplateState{Name: name, IgnorePending: t.IgnorePending}
		var deps []Dependency
		for _, d := range append(append([]policyv1.PolicyDependency(nil), local.Spec.Dependencies...), t.ExtraDependencies...) {
			deps = append(deps, Dependency{PolicyDependency: d, Current: y.compliance(ctx, d, rootNs)})
		}
		var cur policyv1.ConfigurationPolicy
		err := y.spokeC.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, &cur)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if msg := Unmet(deps); msg != "" {
			if exists {
				if err := y.spoke.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
					return nil, err
				}
			}
			y.event(ctx, local, name, policyv1.Pending, msg)
			st.Compliance = policyv1.Pending
			states = append(states, st)
			continue
		}
		if hubtemplate.HasProtected(t.ObjectDefinition.Raw) {
			// The engine decrypts in memory (OCM's way): the ConfigurationPolicy
			// keeps the encrypted text and carries the replica's IV; the agent
			// keeps the cluster's key on the managed cluster.
			if _, err := y.encryptionKey(ctx); err != nil {
				if exists {
					if err := y.spoke.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
						return nil, err
					}
				}
				y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
				states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
				continue
			}
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[hubtemplate.IVAnnotation] = local.Annotations[hubtemplate.IVAnnotation]
			u.SetAnnotations(ann)
		}
		var want policyv1.ConfigurationPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &want); err != nil {
			y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
			states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
			continue
		}
		if local.Spec.RemediationAction != "" {
			want.Spec.RemediationAction = policyv1.RemediationAction(strings.ToLower(string(local.Spec.RemediationAction)))
		}
		labels := map[string]string{PolicyLabel: local.Name}
		for k, v := range want.Labels {
			labels[k] = v
		}
		owner := metav1.OwnerReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: local.Name, UID: local.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}
		if !exists {
			obj := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: y.ns, Labels: labels,
				Annotations: want.Annotations, OwnerReferences: []metav1.OwnerReference{owner}}, Spec: want.Spec}
			if err := y.spoke.Create(ctx, obj); err != nil {
				return nil, fmt.Errorf("create ConfigurationPolicy %s/%s: %w", y.ns, name, err)
			}
			states = append(states, st)
			continue
		}
		st.Compliance = cur.Status.ComplianceState
		if !equality.Semantic.DeepEqual(cur.Spec, want.Spec) || !reflect.DeepEqual(cur.Labels, labels) ||
			len(cur.OwnerReferences) != 1 || cur.OwnerReferences[0].UID != local.UID {
			upd := cur.DeepCopy()
			upd.Spec, upd.Labels, upd.OwnerReferences = want.Spec, labels, []metav1.OwnerReference{owner}
			// A merge patch: the engine's status writes do not conflict with it.
			if err := y.spoke.Patch(ctx, upd, client.MergeFrom(&cur)); err != nil {
				return nil, fmt.Errorf("update ConfigurationPolicy %s/%s: %w", y.ns, name, err)
			}
		}
		states = append(states, st)
	}
	if err := y.pruneWatchedGatekeeper(ctx, local.Name, keepGK); err != nil {
		return nil, err
	}
	return states, y.pruneTemplates(ctx, local.Name, keep)
}

func (y *syncer) deleteTemplate(ctx context.Context, name string) error {
	obj := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: y.ns}}
	if err := y.spoke.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// HubTemplateErrorPrefix starts the message of a template the hub could not
// resolve, as the hub writes it on the replica (and OCM's framework reports it).
const HubTemplateErrorPrefix = "NonCompliant; violation - Error occurred while processing hub-templates: "

// compliance is the current state of a dependency on the managed cluster.
func (y *syncer) compliance(ctx context.Context, d policyv1.PolicyDependency, rootNs string) policyv1.ComplianceState {
	kind, name := DependencyTarget(d, rootNs)
	key := client.ObjectKey{Namespace: y.ns, Name: name}
	switch kind {
	case "Policy":
		var p policyv1.Policy
		if y.spokeC.Get(ctx, key, &p) == nil {
			return p.Status.ComplianceState
		}
	case "ConfigurationPolicy":
		var p policyv1.ConfigurationPolicy
		if y.spokeC.Get(ctx, key, &p) == nil {
			return p.Status.ComplianceState
		}
	}
	return ""
}

// event records a compliance event the framework itself decides (Pending,
// template errors) on the copy, unless the newest one for the template says
// the same.
func (y *syncer) event(ctx context.Context, local *policyv1.Policy, template string, state policyv1.ComplianceState, msg string) {
	reason := EventReason(y.ns, template)
	var l corev1.EventList
	if err := y.spokeC.List(ctx, &l, client.InNamespace(y.ns)); err == nil {
		_, details := Status(y.ns, local.Name, []TemplateState{{Name: template}}, l.Items)
		if h := details[0].History; len(h) > 0 && h[0].Message == msg {
			return
		}
	}
	typ := corev1.EventTypeWarning
	if state == policyv1.Compliant {
		typ = corev1.EventTypeNormal
	}
	now := metav1.NewTime(time.Now())
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", local.Name, now.UnixNano()), Namespace: y.ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: y.ns, Name: local.Name, UID: local.UID},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: FrameworkName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, ReportingController: FrameworkName,
	}
	if err := y.spoke.Create(ctx, e); err != nil {
		y.o.Log.Error(err, "record event", "policy", local.Name)
	}
}

// statusSync writes the status on the copy and on the hub replica.
func (y *syncer) statusSync(ctx context.Context, rep, local *policyv1.Policy, states []TemplateState) error {
	var l corev1.EventList
	if err := y.spokeC.List(ctx, &l, client.InNamespace(y.ns)); err != nil {
		return err
	}
	fwdErr := y.forward(ctx, rep, HubEvents(y.ns, rep, states, l.Items))
	compliant, details := Status(y.ns, local.Name, states, l.Items)
	if t := Lagging(states, details); t != "" {
		// The engine wrote the template's status; its event follows (and
		// brings this policy back). Wait for it rather than pair the new
		// state with the old history, unless it never comes.
		since, seen := y.lagging[local.Name]
		if !seen {
			since = time.Now()
			y.lagging[local.Name] = since
		}
		if time.Since(since) < maxEventLag {
			y.queue.AddAfter(local.Name, time.Second)
			return fwdErr
		}
		y.o.Log.Info("writing a status whose history lags its template's state", "policy", local.Name, "template", t)
	}
	delete(y.lagging, local.Name)
	want := policyv1.PolicyStatus{ComplianceState: compliant, Details: details}
	if !equality.Semantic.DeepEqual(local.Status.ComplianceState, want.ComplianceState) || !equality.Semantic.DeepEqual(local.Status.Details, want.Details) {
		upd := local.DeepCopy()
		upd.Status.ComplianceState, upd.Status.Details = want.ComplianceState, want.Details
		if err := y.spoke.Status().Patch(ctx, upd, client.MergeFrom(local)); err != nil {
			return fmt.Errorf("write the status of policy %s/%s on the managed cluster: %w", y.ns, local.Name, err)
		}
	}
	if !equality.Semantic.DeepEqual(rep.Status.ComplianceState, want.ComplianceState) || !equality.Semantic.DeepEqual(rep.Status.Details, want.Details) {
		upd := rep.DeepCopy()
		upd.Status.ComplianceState, upd.Status.Details = want.ComplianceState, want.Details
		if err := y.hub.Status().Patch(ctx, upd, client.MergeFrom(rep)); err != nil {
			return fmt.Errorf("write the status of replica %s/%s on the hub: %w", y.ns, rep.Name, err)
		}
	}
	return fwdErr
}

// forward creates on the hub the compliance events not forwarded yet; one
// that exists already (an agent restart) counts as forwarded.
func (y *syncer) forward(ctx context.Context, rep *policyv1.Policy, events []corev1.Event) error {
	done := y.forwarded[rep.Name]
	now := make(map[string]bool, len(events))
	for i := range events {
		e := &events[i]
		if !done[e.Name] {
			if err := y.hub.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
				y.forwarded[rep.Name] = now
				return fmt.Errorf("forward compliance event %s to the hub: %w", e.Name, err)
			}
		}
		now[e.Name] = true
	}
	y.forwarded[rep.Name] = now
	return nil
}
