package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// Template sync: the ConfigurationPolicies a replica carries, owned by its
// copy and labelled PolicyLabel, created once their dependencies are met; the
// Gatekeeper objects it carries (gatekeepersync.go); and the state of each
// template for status sync.

// templateSync creates and updates the templates of local, removes the ones
// it no longer carries, and returns each template's state, and how soon to
// look again (0: at the next event) for a Gatekeeper object whose kind the
// cluster does not serve yet.
func (y *syncer) templateSync(ctx context.Context, rep, local *policyv1.Policy) ([]TemplateState, time.Duration, error) {
	rootNs := strings.SplitN(rep.Labels[policyv1.RootPolicyLabel], ".", 2)[0]
	keep, keepGK, keepEngine := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var states []TemplateState
	var retry time.Duration
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
			st, again := y.syncGatekeeper(ctx, local, u)
			if again {
				retry = gatekeeperRetry
			}
			st.IgnorePending = t.IgnorePending
			states = append(states, st)
			continue
		}
		if _, ok := EngineKinds[u.GetKind()]; ok {
			keepEngine[engineKey(u.GetKind(), name)] = true
			st, err := y.syncEngineTemplate(ctx, local, t, u, y.dependencies(ctx, local, t, rootNs))
			if err != nil {
				return nil, 0, err
			}
			states = append(states, st)
			continue
		}
		keep[name] = true
		if u.GetKind() != "ConfigurationPolicy" {
			y.event(ctx, local, name, policyv1.NonCompliant, fmt.Sprintf("NonCompliant; template-error; kind %s is not supported (only %s and Gatekeeper ConstraintTemplates and constraints)", u.GetKind(), supportedKinds()))
			states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
			continue
		}
		if msg := u.GetAnnotations()[hubtemplate.ErrorAnnotation]; msg != "" {
			// The hub could not resolve its templates: report it, create nothing.
			if err := y.deleteTemplate(ctx, name); err != nil {
				return nil, 0, err
			}
			y.event(ctx, local, name, policyv1.NonCompliant, HubTemplateErrorPrefix+msg)
			states = append(states, TemplateState{Name: name, Compliance: policyv1.NonCompliant})
			continue
		}
		st := TemplateState{Name: name, IgnorePending: t.IgnorePending}
		deps := y.dependencies(ctx, local, t, rootNs)
		var cur policyv1.ConfigurationPolicy
		err := y.spokeC.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, &cur)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, 0, err
		}
		if msg := Unmet(deps); msg != "" {
			if exists {
				if err := y.spoke.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
					return nil, 0, err
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
						return nil, 0, err
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
				return nil, 0, fmt.Errorf("create ConfigurationPolicy %s/%s: %w", y.ns, name, err)
			}
			states = append(states, st)
			continue
		}
		st.Compliance = cur.Status.ComplianceState
		if h := cur.Status.History; len(h) > 0 {
			st.Changed = h[0].LastTimestamp.Time
		}
		if !equality.Semantic.DeepEqual(cur.Spec, want.Spec) || !reflect.DeepEqual(cur.Labels, labels) ||
			len(cur.OwnerReferences) != 1 || cur.OwnerReferences[0].UID != local.UID {
			upd := cur.DeepCopy()
			upd.Spec, upd.Labels, upd.OwnerReferences = want.Spec, labels, []metav1.OwnerReference{owner}
			// A merge patch: the engine's status writes do not conflict with it.
			if err := y.spoke.Patch(ctx, upd, client.MergeFrom(&cur)); err != nil {
				return nil, 0, fmt.Errorf("update ConfigurationPolicy %s/%s: %w", y.ns, name, err)
			}
		}
		states = append(states, st)
	}
	if err := y.pruneWatchedGatekeeper(ctx, local.Name, keepGK); err != nil {
		return nil, 0, err
	}
	if err := y.pruneEngineTemplates(ctx, local.Name, keepEngine); err != nil {
		return nil, 0, err
	}
	return states, retry, y.pruneTemplates(ctx, local.Name, keep)
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

// dependencies are the policy's and the template's dependencies with their
// current state.
func (y *syncer) dependencies(ctx context.Context, local *policyv1.Policy, t *policyv1.PolicyTemplate, rootNs string) []Dependency {
	var deps []Dependency
	for _, d := range append(append([]policyv1.PolicyDependency(nil), local.Spec.Dependencies...), t.ExtraDependencies...) {
		deps = append(deps, Dependency{PolicyDependency: d, Current: y.compliance(ctx, d, rootNs)})
	}
	return deps
}

// supportedKinds lists the policy kinds the agent delivers, sorted.
func supportedKinds() string {
	kinds := []string{"ConfigurationPolicy"}
	for k := range EngineKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}

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
	default:
		if gvk, ok := EngineKinds[kind]; ok {
			return y.engineCompliance(ctx, gvk, name)
		}
	}
	return ""
}
