package work

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/internal/admissionclient"
)

// maxProblems caps how many problems one rejection lists.
const maxProblems = 10

// WebhookPath is where the ManifestWork validating webhook is served.
const WebhookPath = "/validate-manifestwork"

// ReasonNotAClusterNamespace is the reason of the Warning event on a
// ManifestWork created in a namespace that belongs to no managed cluster.
const ReasonNotAClusterNamespace = "NotAClusterNamespace"

// Options configures the hub side of work distribution. Every field documents its default.
type Options struct {
	// ManifestLimit is the largest total size of a ManifestWork's manifests in
	// bytes. Default 500 KiB.
	ManifestLimit int
	// NilExecutorValidating makes the webhooks check a work (or a
	// ManifestWorkReplicaSet template) without spec.executor as if it named
	// the agent's own identity, DefaultExecutorName: its requester needs
	// execute-as for that name, so writing a work into a cluster namespace no
	// longer carries the agent's rights on the cluster by itself. OCM's hub
	// feature gate of the same name. Default false, as in OCM.
	NilExecutorValidating bool
	// Admission is the client the webhooks read and ask SubjectAccessReviews
	// with. Default: one of their own (admissionclient.New).
	Admission client.Client
}

// Setup registers the ManifestWork and ManifestWorkReplicaSet admission handlers on mgr.GetWebhookServer()
// and the controller that reports works in namespaces of no managed cluster.
// (The ManifestWorkReplicaSet controller is hub/workreplicaset, set up with
// placement.)
//
// CONTRACT (the hub wiring in hub/ calls this): keep this signature.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := workv1.Install(mgr.GetScheme()); err != nil {
		return err
	}
	if err := clusterv1.Install(mgr.GetScheme()); err != nil {
		return err
	}
	if err := workv1alpha1.Install(mgr.GetScheme()); err != nil {
		return err
	}
	if err := addonv1alpha1.Install(mgr.GetScheme()); err != nil {
		return err
	}
	live := opts.Admission
	if live == nil {
		var err error
		if live, err = admissionclient.New(mgr); err != nil {
			return err
		}
	}
	mgr.GetWebhookServer().Register(WebhookPath, &webhook.Admission{Handler: &validator{
		decoder: admission.NewDecoder(mgr.GetScheme()),
		reader:  live,
		sar:     live,
		limit:   opts.ManifestLimit,
		nilExec: opts.NilExecutorValidating,
	}})
	mgr.GetWebhookServer().Register(FinalizerPath, &webhook.Admission{Handler: FinalizerHandler()})
	mgr.GetWebhookServer().Register(ReplicaSetWebhookPath, &webhook.Admission{Handler: &replicaSetValidator{
		decoder: admission.NewDecoder(mgr.GetScheme()),
		sar:     live,
		limit:   opts.ManifestLimit,
		nilExec: opts.NilExecutorValidating,
	}})
	mgr.GetWebhookServer().Register(AddonWebhookPath, &webhook.Admission{Handler: &addonValidator{
		decoder: admission.NewDecoder(mgr.GetScheme()),
		sar:     live,
		nilExec: opts.NilExecutorValidating,
	}})
	r := &namespaceChecker{client: mgr.GetClient(), recorder: mgr.GetEventRecorder("work-namespace-check")}
	skip := true
	err := ctrl.NewControllerManagedBy(mgr).
		Named("manifestwork-namespace-check").
		For(&workv1.ManifestWork{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{SkipNameValidation: &skip}).
		Complete(r)
	if err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("manifestwork-ttl").
		For(&workv1.ManifestWork{}, builder.WithPredicates(predicate.NewPredicateFuncs(hasTTL))).
		WithOptions(controller.Options{SkipNameValidation: &skip}).
		Complete(&expirer{client: mgr.GetClient(), now: time.Now})
	if err != nil {
		return err
	}
	rel := &releaser{client: mgr.GetClient()}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("manifestwork-release").
		WatchesRawSource(source.Kind(mgr.GetCache(), &workv1.ManifestWork{},
			&handler.TypedEnqueueRequestForObject[*workv1.ManifestWork]{}, deleting)).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1.ManagedCluster{},
			handler.TypedEnqueueRequestsFromMapFunc(rel.deletingWorksOf), availabilityChanged)).
		WithOptions(controller.Options{SkipNameValidation: &skip}).
		Complete(rel)
	if err != nil {
		return err
	}
	marker := &deliveryMarker{client: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named("manifestwork-delivery").
		WatchesRawSource(source.Kind(mgr.GetCache(), &workv1.ManifestWork{},
			&handler.TypedEnqueueRequestForObject[*workv1.ManifestWork]{}, appliedOrSpecChanged)).
		WatchesRawSource(source.Kind(mgr.GetCache(), &clusterv1.ManagedCluster{},
			handler.TypedEnqueueRequestsFromMapFunc(marker.worksOfCluster), holdChanged)).
		WithOptions(controller.Options{SkipNameValidation: &skip}).
		Complete(marker)
}

// hasTTL lets through only works that may expire.
func hasTTL(o client.Object) bool {
	w, ok := o.(*workv1.ManifestWork)
	return ok && w.Spec.DeleteOption != nil && w.Spec.DeleteOption.TTLSecondsAfterFinished != nil
}

// Webhooks returns the validating webhooks this package serves. ClientConfig.URL
// holds only the path (for example "/validate-manifestwork"); the hub prefixes its
// own base URL and sets CABundle when it registers them.
func Webhooks() []admissionregistrationv1.ValidatingWebhook {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	return []admissionregistrationv1.ValidatingWebhook{{
		Name:         "manifestworkvalidators.admission.work.open-cluster-management.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(WebhookPath)},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{workv1.GroupName},
				APIVersions: []string{"v1"},
				Resources:   []string{"manifestworks"},
			},
		}},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](10),
	}, replicaSetWebhook(), addonWebhook()}
}

// validator admits ManifestWorks whose manifests pass Validate, and warns when
// the namespace belongs to no managed cluster.
type validator struct {
	decoder admission.Decoder
	reader  client.Reader
	// sar creates SubjectAccessReviews (the executor check).
	sar   client.Client
	limit int
	// nilExec is Options.NilExecutorValidating.
	nilExec bool
}

func (v *validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	work := &workv1.ManifestWork{}
	if err := v.decoder.Decode(req, work); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the ManifestWork: %w", err))
	}
	workloadSame := false
	if req.Operation == admissionv1.Update {
		// Writes that leave the spec alone (finalizers, labels and status by
		// agents and controllers, deletion) carry nothing new to the cluster.
		old := &workv1.ManifestWork{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot read the stored ManifestWork: %w", err))
		}
		if equality.Semantic.DeepEqual(old.Spec, work.Spec) {
			return admission.Allowed("")
		}
		workloadSame = equality.Semantic.DeepEqual(old.Spec.Workload, work.Spec.Workload)
	}
	// Nothing new may be written where a denied or deleted cluster's agent could
	// still be watching. The ManagedCluster is read from the apiserver, not a
	// cache, so a write that follows a deny is always judged by it.
	hold, isCluster, err := clusterHold(ctx, v.reader, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("cannot check cluster %s: %w", req.Namespace, err))
	} else if hold.Reason != "" {
		return admission.Denied(fmt.Sprintf("ManifestWork %s/%s cannot be created or changed: %s", req.Namespace, work.Name, hold.Message))
	}
	// The executor is judged at every write that changes the spec, not only
	// when the executor itself changes: whoever edits the manifests, update
	// strategies or delete options of a work with an executor decides what
	// that identity does on the cluster, so they need execute-as for it too.
	// Writes that leave the spec alone (status, finalizers, labels) were
	// admitted above, so a permission revoked later freezes no work.
	msg, err := CheckExecutor(ctx, v.sar, ExecutorCheck{User: req.UserInfo, Namespace: req.Namespace,
		Field: "spec.executor", Executor: work.Spec.Executor, NilExecutorValidating: v.nilExec})
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("cannot check the executor: %w", err))
	}
	if msg != "" {
		return admission.Denied(fmt.Sprintf("ManifestWork %s/%s: %s", req.Namespace, work.Name, msg))
	}
	if workloadSame {
		// The manifests are not judged again: a limit lowered later must not
		// strand existing works.
		return admission.Allowed("")
	}
	if problems := Validate(work, v.limit); len(problems) > 0 {
		if len(problems) > maxProblems {
			problems = append(problems[:maxProblems], fmt.Sprintf("and %d more problems", len(problems)-maxProblems))
		}
		return admission.Denied(fmt.Sprintf("ManifestWork %s/%s is invalid: spec.workload.manifests: %s", req.Namespace, work.Name, strings.Join(problems, "; ")))
	}
	resp := admission.Allowed("")
	if req.Operation == admissionv1.Create {
		if !isCluster {
			resp = resp.WithWarnings(notAClusterMessage(req.Namespace))
		}
	}
	return resp
}

// clusterHold reads the ManagedCluster named like the namespace and decides
// whether it takes deliveries (HoldFor); found says whether there is one.
func clusterHold(ctx context.Context, c client.Reader, ns string) (hold Hold, found bool, err error) {
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, mc); apierrors.IsNotFound(err) {
		return HoldFor(nil), false, nil
	} else if err != nil {
		return Hold{}, false, err
	}
	return HoldFor(mc), true, nil
}

func isClusterNamespace(ctx context.Context, c client.Reader, ns string) (bool, error) {
	err := c.Get(ctx, client.ObjectKey{Name: ns}, &clusterv1.ManagedCluster{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func notAClusterMessage(ns string) string {
	return fmt.Sprintf("namespace %q belongs to no managed cluster, so no agent will apply this ManifestWork; "+
		"create it in the namespace named after the target cluster", ns)
}

// namespaceChecker reports ManifestWorks that sit in a namespace no managed
// cluster owns, with a Warning event on the work, instead of letting them be
// silently ignored.
type namespaceChecker struct {
	client   client.Client
	recorder events.EventRecorder
}

func (r *namespaceChecker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	work := &workv1.ManifestWork{}
	if err := r.client.Get(ctx, req.NamespacedName, work); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if work.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	ok, err := isClusterNamespace(ctx, r.client, work.Namespace)
	if err != nil || ok {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(work, nil, corev1.EventTypeWarning, ReasonNotAClusterNamespace, "Check", "%s", notAClusterMessage(work.Namespace))
	return ctrl.Result{}, nil
}
