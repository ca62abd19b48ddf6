package configpolicy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Apply creates or updates ConfigurationPolicies on the cluster behind cfg
// (for running the engine standalone, without kubectl). A policy without a
// namespace goes to namespace. It returns "created" or "updated" per policy.
func Apply(ctx context.Context, cfg *rest.Config, namespace string, policies []*policyv1.ConfigurationPolicy) ([]string, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range policies {
		p = p.DeepCopy()
		if p.Namespace == "" {
			p.Namespace = namespace
		}
		p.APIVersion, p.Kind = policyv1.GroupVersion.String(), "ConfigurationPolicy"
		p.Status = policyv1.ConfigurationPolicyStatus{}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return out, err
		}
		delete(obj, "status")
		u := &unstructured.Unstructured{Object: obj}
		api := dyn.Resource(policiesGVR).Namespace(p.Namespace)
		cur, err := api.Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, u, metav1.CreateOptions{})
			if err == nil {
				out = append(out, "created")
			}
		case err == nil:
			cur.Object["spec"] = u.Object["spec"]
			cur.SetLabels(p.Labels)
			cur.SetAnnotations(p.Annotations)
			_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
			if err == nil {
				out = append(out, "updated")
			}
		}
		if err != nil {
			return out, fmt.Errorf("ConfigurationPolicy %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return out, nil
}

// List returns the ConfigurationPolicies of namespace ("" for all), sorted by
// namespace and name.
func List(ctx context.Context, cfg *rest.Config, namespace string) ([]policyv1.ConfigurationPolicy, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(policiesGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]policyv1.ConfigurationPolicy, 0, len(list.Items))
	for _, it := range list.Items {
		var p policyv1.ConfigurationPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, &p); err != nil {
			return nil, fmt.Errorf("ConfigurationPolicy %s/%s: %w", it.GetNamespace(), it.GetName(), err)
		}
		out = append(out, p)
	}
	return out, nil
}
