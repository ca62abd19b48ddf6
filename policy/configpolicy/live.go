package configpolicy

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// Live is an evaluate.Cluster that reads a cluster directly, with no cache
// and no writes: for one-off evaluations such as `policy dryrun --kubeconfig`.
type Live struct {
	ctx    context.Context
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

var _ evaluate.Cluster = (*Live)(nil)

// NewLive reads the cluster behind cfg.
func NewLive(ctx context.Context, cfg *rest.Config) (*Live, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Live{ctx: ctx, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Dynamic is the client Live reads with.
func (l *Live) Dynamic() dynamic.Interface { return l.dyn }

// Mapping implements evaluate.Cluster.
func (l *Live) Mapping(gvk schema.GroupVersionKind) (evaluate.Mapping, error) {
	return (&cluster{mapper: l.mapper}).Mapping(gvk)
}

func (l *Live) resource(m evaluate.Mapping, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return l.dyn.Resource(m.GVR())
	}
	return l.dyn.Resource(m.GVR()).Namespace(namespace)
}

// Get implements evaluate.Cluster.
func (l *Live) Get(m evaluate.Mapping, namespace, name string) (*unstructured.Unstructured, error) {
	got, err := l.resource(m, namespace).Get(l.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return got, err
}

// List implements evaluate.Cluster.
func (l *Live) List(m evaluate.Mapping, namespace string) ([]*unstructured.Unstructured, error) {
	list, err := l.resource(m, namespace).List(l.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// Namespaces implements evaluate.Cluster.
func (l *Live) Namespaces() ([]evaluate.Namespace, error) {
	list, err := l.dyn.Resource(namespacesGVR).List(l.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := make([]evaluate.Namespace, 0, len(list.Items))
	for _, ns := range list.Items {
		out = append(out, evaluate.Namespace{Name: ns.GetName(), Labels: ns.GetLabels(), Terminating: ns.GetDeletionTimestamp() != nil})
	}
	return out, nil
}
