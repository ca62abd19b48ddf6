package agent

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/gatekeeper"
)

// Gatekeeper objects a replica carries are created as they are, cluster-scoped,
// and watched (by label) so that the status Gatekeeper or Flotilla's Rego
// engine writes on them becomes the template's compliance event at once.

// gatekeeperRetry is how soon a Gatekeeper object whose kind the managed
// cluster does not serve yet (a constraint before its template compiled) is
// tried again.
const gatekeeperRetry = 2 * time.Second

// syncGatekeeper creates or updates one Gatekeeper object of local and
// returns its state (recording its compliance event), and whether to try
// again in gatekeeperRetry (its kind is not served yet, or it changed
// meanwhile).
func (y *syncer) syncGatekeeper(ctx context.Context, local *policyv1.Policy, u *unstructured.Unstructured) (TemplateState, bool) {
	name := u.GetName()
	st := TemplateState{Name: name}
	want := GatekeeperObject(u, local.Name, local.Spec.RemediationAction)
	gvk := want.GroupVersionKind()
	mapping, err := y.spoke.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if gvk.Group == gatekeeper.TemplateGroup {
			y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; the managed cluster does not serve "+gvk.Kind+
				": install Gatekeeper, or enable the config-policy-controller addon (it audits ConstraintTemplates without Gatekeeper)")
			st.Compliance = policyv1.NonCompliant
		}
		// A constraint waits for its template's kind.
		return st, true
	}
	if err := y.watchGatekeeper(mapping.Resource); err != nil {
		y.o.Log.Error(err, "watch Gatekeeper objects", "resource", mapping.Resource.String())
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(gvk)
	err = y.spoke.Get(ctx, client.ObjectKey{Name: name}, cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := y.spoke.Create(ctx, want); err != nil {
			return y.gatekeeperError(ctx, local, name, err)
		}
		return st, false
	case err != nil:
		return y.gatekeeperError(ctx, local, name, err)
	}
	if !reflect.DeepEqual(cur.Object["spec"], want.Object["spec"]) || cur.GetLabels()[PolicyLabel] != local.Name {
		upd := cur.DeepCopy()
		upd.Object["spec"] = want.Object["spec"]
		labels := upd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[PolicyLabel] = local.Name
		upd.SetLabels(labels)
		if err := y.spoke.Update(ctx, upd); err != nil {
			return y.gatekeeperError(ctx, local, name, err)
		}
		return st, false // its status follows the new spec
	}
	state, msg, ok := GatekeeperCompliance(cur)
	if ok {
		y.event(ctx, local, name, state, msg)
		st.Compliance = state
	}
	return st, false
}

// gatekeeperError reports an object the managed cluster refused (say
// Gatekeeper's webhook refusing Rego that does not compile).
func (y *syncer) gatekeeperError(ctx context.Context, local *policyv1.Policy, name string, err error) (TemplateState, bool) {
	if apierrors.IsConflict(err) || meta.IsNoMatchError(err) {
		return TemplateState{Name: name}, true
	}
	y.event(ctx, local, name, policyv1.NonCompliant, "NonCompliant; template-error; "+err.Error())
	return TemplateState{Name: name, Compliance: policyv1.NonCompliant}, false
}

// watchGatekeeper starts (once) a watch of the delivered objects of a
// Gatekeeper resource, so their status changes reach the policy at once: an
// informer of the labelled objects only, a source of the controller mapping
// each to the policy its PolicyLabel names. It runs until the agent stops.
func (y *syncer) watchGatekeeper(gvr schema.GroupVersionResource) error {
	if _, ok := y.gkInformers[gvr]; ok {
		return nil
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(y.dyn, gvr, "", 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = PolicyLabel
	}).Informer()
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if p := obj.GetLabels()[PolicyLabel]; p != "" {
			return y.requests(p)
		}
		return nil
	})
	if err := y.controller.Watch(&source.Informer{Informer: inf, Handler: byLabel}); err != nil {
		return err
	}
	y.gkInformers[gvr] = inf
	go inf.Run(y.stop)
	return nil
}

// pruneWatchedGatekeeper deletes the Gatekeeper objects of policy it no
// longer carries among the resources already watched (no request unless
// one is to go).
func (y *syncer) pruneWatchedGatekeeper(ctx context.Context, policy string, keep map[string]bool) error {
	for gvr, inf := range y.gkInformers {
		for _, o := range inf.GetStore().List() {
			u, ok := o.(*unstructured.Unstructured)
			if !ok || u.GetLabels()[PolicyLabel] != policy || keep[u.GetKind()+"/"+u.GetName()] {
				continue
			}
			if err := y.dyn.Resource(gvr).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// pruneGatekeeper deletes the Gatekeeper objects labelled for policy that
// it no longer carries (keep: "Kind/name"); every Gatekeeper resource the
// cluster serves is looked at, so nothing is left behind after a restart.
func (y *syncer) pruneGatekeeper(ctx context.Context, policy string, keep map[string]bool) error {
	crds, err := y.dyn.Resource(crdsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list CustomResourceDefinitions: %w", err)
	}
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if group != gatekeeper.TemplateGroup && group != gatekeeper.ConstraintGroup {
			continue
		}
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		version := servedVersion(&crd)
		if version == "" {
			continue
		}
		ri := y.dyn.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: plural})
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: PolicyLabel + "=" + policy})
		if err != nil {
			return fmt.Errorf("list %s.%s: %w", plural, group, err)
		}
		for _, o := range list.Items {
			if keep[o.GetKind()+"/"+o.GetName()] {
				continue
			}
			if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}
