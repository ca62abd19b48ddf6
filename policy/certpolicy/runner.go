package certpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
	"flotilla.dev/flotilla/policy/event"
)

// DefaultEventSource is the component of the compliance events (upstream's
// controller name).
const DefaultEventSource = "certificate-policy-controller"

// Options configure Run. Every field documents its default.
type Options struct {
	// Config reaches the cluster whose certificates are checked. Required.
	Config *rest.Config
	// Namespace holds the CertificatePolicies to run. Default "" (every namespace).
	Namespace string
	// DefaultMinimum applies to policies without minimumDuration. Default
	// DefaultMinimumDuration (100h).
	DefaultMinimum time.Duration
	// Workers is the number of policies evaluated at once. Default 2.
	Workers int
	// EventSource is the component name on compliance events. Default DefaultEventSource.
	EventSource string
	// Log receives progress and errors. Default: logr.Discard().
	Log logr.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Run runs the engine until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Config == nil {
		return errors.New("certpolicy: Options.Config is required")
	}
	if o.Workers <= 0 {
		o.Workers = 2
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
	policies := cache.ByObject{}
	if o.Namespace != "" {
		policies.Namespaces = map[string]cache.Config{o.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(o.Config, ctrl.Options{
		Scheme: scheme.New(), Logger: o.Log,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&policyv1.CertificatePolicy{}: policies,
				// Secrets without a certificate keep no data in memory.
				&corev1.Secret{}: {Transform: slimSecret},
			},
		},
	})
	if err != nil {
		return err
	}
	r := &reconciler{o: o, c: mgr.GetClient(), log: o.Log.WithName("certpolicy")}
	skip := true
	priorityQueue := false
	err = builder.ControllerManagedBy(mgr).
		Named("certificatepolicy").
		For(&policyv1.CertificatePolicy{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretChanged)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, SkipNameValidation: &skip, UsePriorityQueue: &priorityQueue}).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// slimSecret drops what the engine never reads: managed fields, annotations
// (kubectl's last-applied-configuration holds the whole Secret), and every
// data key but the certificate's, so private keys (tls.key) and the data of
// Secrets that hold no certificate are never kept in the agent's memory.
func slimSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields, s.Annotations, s.StringData = nil, nil, nil
	key := certKey(s)
	if cert, ok := s.Data[key]; ok {
		s.Data = map[string][]byte{key: cert}
	} else {
		s.Data = nil
	}
	return s, nil
}

type reconciler struct {
	o   Options
	c   client.Client
	log logr.Logger
}

// secretChanged: the policies selecting the Secret's namespace.
func (r *reconciler) secretChanged(ctx context.Context, obj client.Object) []reconcile.Request {
	var ns corev1.Namespace
	if err := r.c.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, &ns); err != nil {
		return r.allPolicies(ctx)
	}
	one := []evaluate.Namespace{toNamespace(&ns)}
	var l policyv1.CertificatePolicyList
	if err := r.c.List(ctx, &l); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range l.Items {
		if sel, err := evaluate.SelectNamespaces(l.Items[i].Spec.NamespaceSelector, one); err != nil || len(sel) > 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	}
	return out
}

// namespaceChanged: every policy (a namespace's labels or existence change
// what selectors select).
func (r *reconciler) namespaceChanged(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.allPolicies(ctx)
}

func (r *reconciler) allPolicies(ctx context.Context) []reconcile.Request {
	var l policyv1.CertificatePolicyList
	if err := r.c.List(ctx, &l); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
	}
	return out
}

func toNamespace(ns *corev1.Namespace) evaluate.Namespace {
	return evaluate.Namespace{Name: ns.Name, Labels: ns.Labels, Terminating: ns.DeletionTimestamp != nil}
}

// Reconcile: get the policy, read its namespaces and Secrets from the
// caches, Evaluate, write the status and event when they changed, and come
// back when Evaluate says the verdict changes by itself.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p policyv1.CertificatePolicy
	if err := r.c.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	in, err := r.inputs(ctx, &p)
	if err != nil {
		return reconcile.Result{}, err
	}
	res := Evaluate(in)
	if err := r.write(ctx, &p, res); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, err
	}
	if res.Next.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(res.Next.Sub(r.o.Now()), time.Millisecond)}, nil
}

// inputs reads the namespaces and the Secrets of the namespaces p selects.
func (r *reconciler) inputs(ctx context.Context, p *policyv1.CertificatePolicy) (Input, error) {
	in := Input{Policy: p, Now: r.o.Now(), DefaultMinimum: r.o.DefaultMinimum}
	var nsl corev1.NamespaceList
	if err := r.c.List(ctx, &nsl); err != nil {
		return in, err
	}
	for i := range nsl.Items {
		in.Namespaces = append(in.Namespaces, toNamespace(&nsl.Items[i]))
	}
	selected, err := evaluate.SelectNamespaces(p.Spec.NamespaceSelector, in.Namespaces)
	if err != nil {
		return in, nil // Evaluate reports it
	}
	for _, ns := range selected {
		var sl corev1.SecretList
		if err := r.c.List(ctx, &sl, client.InNamespace(ns)); err != nil {
			return in, err
		}
		for i := range sl.Items {
			in.Secrets = append(in.Secrets, &sl.Items[i])
		}
	}
	return in, nil
}

// write stores res as p's status when what it says changed (not merely the
// time left on each certificate), with a history entry and a compliance
// event when the message changed.
func (r *reconciler) write(ctx context.Context, p *policyv1.CertificatePolicy, res Result) error {
	status := res.Status
	status.History = p.Status.History
	var event *corev1.Event
	if len(p.Status.History) == 0 || !conditions.SameMessage(p.Status.History[0].Message, res.Message) {
		now := metav1.NewTime(r.o.Now().UTC().Truncate(time.Second))
		event = r.event(p, status.ComplianceState, res.Message)
		status.History = append([]policyv1.ComplianceHistory{{LastTimestamp: now, Message: res.Message, EventName: event.Name}}, p.Status.History...)
		if len(status.History) > policyv1.MaxHistory {
			status.History = status.History[:policyv1.MaxHistory]
		}
	}
	if sameStatus(p.Status, status) {
		return nil
	}
	upd := p.DeepCopy()
	upd.Status = status
	if err := r.c.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("status of CertificatePolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	if event != nil {
		r.log.Info(res.Message, "policy", p.Namespace+"/"+p.Name)
		if err := r.c.Create(ctx, event); err != nil {
			r.log.Error(err, "cannot record compliance event", "policy", p.Namespace+"/"+p.Name)
		}
	}
	return nil
}

// sameStatus ignores lastEvaluated and the time left on each certificate.
func sameStatus(a, b policyv1.CertificatePolicyStatus) bool {
	strip := func(s policyv1.CertificatePolicyStatus) policyv1.CertificatePolicyStatus {
		s = *s.DeepCopy()
		s.LastEvaluated = ""
		for ns, d := range s.CompliancyDetails {
			for name, c := range d.NonCompliantCertificatesList {
				c.Expiry = 0
				d.NonCompliantCertificatesList[name] = c
			}
			s.CompliancyDetails[ns] = d
		}
		return s
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// event is the compliance event (event.Compliance).
func (r *reconciler) event(p *policyv1.CertificatePolicy, state policyv1.ComplianceState, msg string) *corev1.Event {
	return event.Compliance(p, policyv1.GroupVersion.WithKind("CertificatePolicy"), state, msg, r.o.Now(), r.o.EventSource)
}
