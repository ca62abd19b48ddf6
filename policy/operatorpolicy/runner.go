package operatorpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/configpolicy/templates"
	policyevent "flotilla.dev/flotilla/policy/event"
)

// DefaultEventSource is the component of the compliance events.
const DefaultEventSource = "operator-policy-controller"

// OwnerLabel is the label OLM puts on the Deployments a CSV installs; the
// engine watches only Deployments carrying it.
const OwnerLabel = "olm.owner"

// subscriptionCRD names the CRD whose presence says OLM is installed.
const subscriptionCRD = "subscriptions." + operatorsv1alpha1.GroupName

// Options configure Run. Every field documents its default.
type Options struct {
	// Config reaches the cluster. Required.
	Config *rest.Config
	// Namespace holds the OperatorPolicies to run. Default "" (every namespace).
	Namespace string
	// EventSource is the component name on compliance events. Default DefaultEventSource.
	EventSource string
	// Log receives progress and errors. Default: logr.Discard().
	Log logr.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// errOLMChanged ends one run when OLM's CRDs appear or go.
var errOLMChanged = errors.New("OLM's APIs appeared or went")

// Run runs the engine until ctx ends. Where the cluster does not serve
// OLM's APIs, every OperatorPolicy is NonCompliant with NoOLMMessage; the
// engine starts again, watching OLM's objects, when OLM's CRDs appear.
func Run(ctx context.Context, o Options) error {
	if o.Config == nil {
		return errors.New("operatorpolicy: Options.Config is required")
	}
	if o.EventSource == "" {
		o.EventSource = DefaultEventSource
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for {
		olm, err := olmServed(o.Config)
		if err != nil {
			return err
		}
		o.Log.Info("running the OperatorPolicy engine", "olm", olm)
		err = runOnce(ctx, o, olm)
		if !errors.Is(err, errOLMChanged) {
			return err
		}
	}
}

// olmServed reports whether the cluster serves OLM's Subscription API.
func olmServed(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	_, err = dc.ServerResourcesForGroupVersion(operatorsv1alpha1.SchemeGroupVersion.String())
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("ask the cluster whether it serves OLM: %w", err)
}

// Scheme is the scheme the engine reads with: Flotilla's, OLM's and CRDs.
func Scheme() *runtime.Scheme {
	s := scheme.New()
	utilruntime.Must(operatorsv1alpha1.AddToScheme(s))
	utilruntime.Must(operatorsv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

func runOnce(ctx context.Context, o Options, olm bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	policies := cache.ByObject{}
	if o.Namespace != "" {
		policies.Namespaces = map[string]cache.Config{o.Namespace: {}}
	}
	owned, err := labels.NewRequirement(OwnerLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(o.Config, ctrl.Options{
		Scheme: Scheme(), Logger: o.Log,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&policyv1beta1.OperatorPolicy{}: policies,
			&appsv1.Deployment{}:            {Label: labels.NewSelector().Add(*owned)},
		}},
	})
	if err != nil {
		return err
	}
	r := &reconciler{o: o, c: mgr.GetClient(), reader: mgr.GetAPIReader(), olm: olm, log: o.Log.WithName("operatorpolicy")}
	skip := true
	priorityQueue := false
	b := builder.ControllerManagedBy(mgr).Named("operatorpolicy").
		For(&policyv1beta1.OperatorPolicy{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// OLM's CRDs coming or going start the engine again (names only:
		// CRDs' schemas are large).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueueIface) {
				if e.Object.GetName() == subscriptionCRD && !olm {
					cancel(errOLMChanged)
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueueIface) {
				if e.Object.GetName() == subscriptionCRD && olm {
					cancel(errOLMChanged)
				}
			},
		}, builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: &skip, UsePriorityQueue: &priorityQueue})
	if olm {
		for _, obj := range []client.Object{&operatorsv1alpha1.Subscription{}, &operatorsv1.OperatorGroup{}, &operatorsv1alpha1.InstallPlan{},
			&operatorsv1alpha1.ClusterServiceVersion{}, &operatorsv1alpha1.CatalogSource{}, &appsv1.Deployment{}} {
			b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.allPolicies))
		}
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	err = mgr.Start(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errOLMChanged) {
		return errOLMChanged
	}
	return err
}

type reconciler struct {
	o      Options
	c      client.Client
	reader client.Reader
	olm    bool
	log    logr.Logger
}

func (r *reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var l policyv1beta1.OperatorPolicyList
	if err := r.c.List(ctx, &l); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
	}
	return out
}

// Reconcile: get the policy, parse it (templates resolved), read the facts,
// Decide, act (enforce), write the status and event when they changed.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p policyv1beta1.OperatorPolicy
	if err := r.c.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	d := r.desired(ctx, &p)
	f := Facts{OLM: r.olm}
	if r.olm && len(d.Invalid) == 0 {
		var err error
		if f, err = r.facts(ctx, d); err != nil {
			return reconcile.Result{}, err
		}
	}
	dec := Decide(&p, d, f)
	var failed []string
	for _, a := range dec.Actions {
		if err := r.act(ctx, a); err != nil {
			r.log.Error(err, "enforce", "policy", req.String(), "action", a.String())
			failed = append(failed, fmt.Sprintf("%s: %v", a, err))
		}
	}
	if len(failed) > 0 {
		// What enforce could not do is the policy's state.
		dec.Compliance = policyv1.NonCompliant
		dec.Message = "NonCompliant; enforce failed: " + strings.Join(failed, "; ")
		for i := range dec.Conditions {
			if dec.Conditions[i].Type == CompliantType {
				dec.Conditions[i] = cond(CompliantType, false, "NonCompliant", dec.Message)
			}
		}
	}
	if err := r.write(ctx, &p, dec); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, err
	}
	if len(failed) > 0 {
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	return reconcile.Result{}, nil
}

// desired parses the spec, its subscription's managed-cluster templates
// resolved against the cluster.
func (r *reconciler) desired(ctx context.Context, p *policyv1beta1.OperatorPolicy) Desired {
	raw := p.Spec.Subscription.Raw
	if templates.Has(string(raw)) {
		m, _, err := templates.ResolveJSON(raw, lookup{ctx: ctx, r: r.reader})
		if err != nil {
			return Desired{Invalid: []string{"spec.subscription: " + err.Error()}}
		}
		if raw, err = json.Marshal(m); err != nil {
			return Desired{Invalid: []string{"spec.subscription: " + err.Error()}}
		}
	}
	return Parse(p, raw)
}

// facts reads what the cluster holds about the desired operator.
func (r *reconciler) facts(ctx context.Context, d Desired) (Facts, error) {
	f := Facts{OLM: true}
	ns := d.Subscription.Namespace
	var ogs operatorsv1.OperatorGroupList
	if err := r.c.List(ctx, &ogs, client.InNamespace(ns)); err != nil {
		return f, err
	}
	f.OperatorGroups = ogs.Items
	var subs operatorsv1alpha1.SubscriptionList
	if err := r.c.List(ctx, &subs, client.InNamespace(ns)); err != nil {
		return f, err
	}
	for i := range subs.Items {
		if subs.Items[i].Name == d.Subscription.Name {
			f.Subscription = &subs.Items[i]
		} else {
			f.OtherSubscriptions++
		}
	}
	var plans operatorsv1alpha1.InstallPlanList
	if err := r.c.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return f, err
	}
	f.InstallPlans = plans.Items
	if f.Subscription != nil && f.Subscription.Status.InstalledCSV != "" {
		var csv operatorsv1alpha1.ClusterServiceVersion
		err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: f.Subscription.Status.InstalledCSV}, &csv)
		switch {
		case err == nil:
			f.CSV = &csv
		case !apierrors.IsNotFound(err):
			return f, err
		}
	}
	if f.CSV != nil {
		for _, ds := range f.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			var dep appsv1.Deployment
			err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ds.Name}, &dep)
			switch {
			case err == nil:
				f.Deployments = append(f.Deployments, dep)
			case !apierrors.IsNotFound(err):
				return f, err
			}
		}
		for _, owned := range f.CSV.Spec.CustomResourceDefinitions.Owned {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := r.reader.Get(ctx, client.ObjectKey{Name: owned.Name}, &crd); err == nil {
				f.CRDs = append(f.CRDs, owned.Name)
			}
		}
	}
	if s := d.Subscription.Spec; s.CatalogSource != "" {
		var cs operatorsv1alpha1.CatalogSource
		err := r.c.Get(ctx, client.ObjectKey{Namespace: s.CatalogSourceNamespace, Name: s.CatalogSource}, &cs)
		switch {
		case err == nil:
			f.CatalogSource = &cs
		case !apierrors.IsNotFound(err):
			return f, err
		}
	}
	return f, nil
}

func (r *reconciler) act(ctx context.Context, a Action) error {
	var err error
	switch a.Verb {
	case Create:
		err = r.c.Create(ctx, a.Object)
	case Update, Approve:
		err = r.c.Update(ctx, a.Object)
	case Delete:
		err = client.IgnoreNotFound(r.c.Delete(ctx, a.Object))
	}
	return err
}

// write stores the decision as p's status when it changed, with a history
// entry and a compliance event when the message changed.
func (r *reconciler) write(ctx context.Context, p *policyv1beta1.OperatorPolicy, dec Decision) error {
	upd := p.DeepCopy()
	st := &upd.Status
	st.ComplianceState = dec.Compliance
	st.ObservedGeneration = p.Generation
	st.RelatedObjects = dec.Related
	if st.RelatedObjects == nil {
		st.RelatedObjects = []policyv1.RelatedObject{}
	}
	var conds []metav1.Condition
	for _, c := range dec.Conditions {
		if old := meta.FindStatusCondition(p.Status.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(r.o.Now().UTC().Truncate(time.Second))
		}
		if c.Reason == "" {
			c.Reason = "Unknown"
		}
		c.Message, _ = conditions.FitMessage(c.Message, conditions.MaxMessage)
		conds = append(conds, c)
	}
	st.Conditions = conds
	if d := dec.Subscription(); d != "" {
		st.ResolvedSubscriptionLabel = d
	}
	var event *corev1.Event
	if len(p.Status.History) == 0 || !conditions.SameMessage(p.Status.History[0].Message, dec.Message) {
		now := metav1.NewTime(r.o.Now().UTC().Truncate(time.Second))
		event = r.event(p, dec.Compliance, dec.Message)
		st.History = append([]policyv1.ComplianceHistory{{LastTimestamp: now, Message: dec.Message, EventName: event.Name}}, p.Status.History...)
		if len(st.History) > policyv1.MaxHistory {
			st.History = st.History[:policyv1.MaxHistory]
		}
	}
	if reflect.DeepEqual(p.Status, upd.Status) {
		return nil
	}
	if err := r.c.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("status of OperatorPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	if event != nil {
		r.log.Info(dec.Message, "policy", p.Namespace+"/"+p.Name)
		if err := r.c.Create(ctx, event); err != nil {
			r.log.Error(err, "cannot record compliance event", "policy", p.Namespace+"/"+p.Name)
		}
	}
	return nil
}

// Subscription is the related Subscription's "package.namespace", or "".
func (dec Decision) Subscription() string {
	for _, o := range dec.Related {
		if o.Object.Kind == kindSubscription {
			return o.Object.Metadata.Name + "." + o.Object.Metadata.Namespace
		}
	}
	return ""
}

// event is the compliance event (policyevent.Compliance).
func (r *reconciler) event(p *policyv1beta1.OperatorPolicy, state policyv1.ComplianceState, msg string) *corev1.Event {
	return policyevent.Compliance(p, policyv1beta1.GroupVersion.WithKind("OperatorPolicy"), state, msg, r.o.Now(), r.o.EventSource)
}

func crdObject(name string) client.Object {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// lookup reads the cluster for the subscription's templates.
type lookup struct {
	ctx context.Context
	r   client.Reader
}

func (l lookup) Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := l.r.Get(l.ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	return u, err
}

func (l lookup) List(gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error) {
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.r.List(l.ctx, ul, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(ul.Items))
	for i := range ul.Items {
		out = append(out, &ul.Items[i])
	}
	return out, nil
}

type workqueueIface = workqueue.TypedRateLimitingInterface[reconcile.Request]
