package agent

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Spec sync: the replica's copy on the managed cluster, in the namespace of
// the same name, equal to the replica in spec, labels and annotations; gone
// with its templates when the replica goes.

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
	if err := y.pruneEngineTemplates(ctx, name, nil); err != nil {
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
