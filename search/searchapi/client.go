// Package searchapi is the client side of the fleet search's aggregated API
// group (search.flotilla.dev/v1alpha1): its names and paths, and a Client
// that posts a cluster's Syncs (the search agent) or searches (users, the
// CLI). It imports client-go and the group's wire types only, so the search
// agent's binary stays small; search/apigroup serves the group.
package searchapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
)

// The group version, its resources and their paths under the hub apiserver.
const (
	Group         = searchv1alpha1.GroupName
	Version       = searchv1alpha1.Version
	Syncs         = "syncs"
	Resources     = "resources"
	ResourcesPath = "/apis/" + Group + "/" + Version + "/" + Resources
	// APIServiceName is the group version's APIService.
	APIServiceName = Version + "." + Group
)

// Limits of one Sync: the server refuses more.
const (
	// MaxSyncBytes bounds a Sync's body.
	MaxSyncBytes = 16 << 20
	// MaxSyncResources bounds its resources.
	MaxSyncResources = 64
)

// SyncsPath is where cluster's agent posts its Syncs.
func SyncsPath(cluster string) string {
	return "/apis/" + Group + "/" + Version + "/namespaces/" + cluster + "/" + Syncs
}

// Client reaches the search API through the hub apiserver, as the identity
// of its config: an agent posts Syncs, a user searches.
type Client struct {
	rest rest.Interface
}

// NewClient is a Client with cfg (the hub apiserver and an identity).
func NewClient(cfg *rest.Config) (*Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{rest: cs.Discovery().RESTClient()}, nil
}

// Sync posts s for cluster.
func (c *Client) Sync(ctx context.Context, cluster string, s *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error) {
	s.APIVersion, s.Kind = Group+"/"+Version, "Sync"
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	raw, err := do(ctx, c.rest.Post().AbsPath(SyncsPath(cluster)).SetHeader("Content-Type", "application/json").Body(body))
	if err != nil {
		return nil, fmt.Errorf("post a Sync for %s: %w", cluster, err)
	}
	var out searchv1alpha1.SyncResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the answer to a Sync: %w", err)
	}
	if len(out.Resources) != len(s.Resources) {
		return nil, fmt.Errorf("the answer to a Sync has %d entries for %d resources", len(out.Resources), len(s.Resources))
	}
	return &out, nil
}

// ListPath is the path that lists resource (in namespace, "" for all)
// below ResourcesPath.
func ListPath(gvr schema.GroupVersionResource, namespace string) string {
	p := ResourcesPath + "/api/" + gvr.Version
	if gvr.Group != "" {
		p = ResourcesPath + "/apis/" + gvr.Group + "/" + gvr.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + gvr.Resource
}

// List searches gvr with the query parameters q (the search API's filters:
// docs/search.md).
func (c *Client) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, q url.Values) (*unstructured.UnstructuredList, error) {
	req := c.listRequest(gvr, namespace, q)
	raw, err := do(ctx, req)
	if err != nil {
		return nil, err
	}
	l := &unstructured.UnstructuredList{}
	if err := l.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the search's answer: %w", err)
	}
	return l, nil
}

// listRequest is the GET of gvr's list in namespace with the query q.
func (c *Client) listRequest(gvr schema.GroupVersionResource, namespace string, q url.Values) *rest.Request {
	req := c.rest.Get().AbsPath(ListPath(gvr, namespace))
	for k, vs := range q {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	return req
}

// Raw reads path below ResourcesPath (discovery: /api/v1, /apis, ...).
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	return do(ctx, c.rest.Get().AbsPath(ResourcesPath+path))
}

// do runs req; a failure answered with a Status is that Status as an
// error (apierrors' reason and the server's message), whatever the
// client's decoder makes of it.
func do(ctx context.Context, req *rest.Request) ([]byte, error) {
	raw, err := req.Do(ctx).Raw()
	if err == nil {
		return raw, nil
	}
	var st metav1.Status
	if json.Unmarshal(raw, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return nil, &apierrors.StatusError{ErrStatus: st}
	}
	return nil, err
}

// Table searches gvr as List does, answered as a meta.k8s.io Table (the
// columns kubectl get prints, CLUSTER first).
func (c *Client) Table(ctx context.Context, gvr schema.GroupVersionResource, namespace string, q url.Values) (*metav1.Table, error) {
	req := c.listRequest(gvr, namespace, q).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	raw, err := do(ctx, req)
	if err != nil {
		return nil, err
	}
	t := &metav1.Table{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("the search's answer: %w", err)
	}
	return t, nil
}

// Resources are the resources the clusters sync, from the search API's
// discovery.
func (c *Client) Resources(ctx context.Context) ([]metav1.APIResourceList, error) {
	var lists []metav1.APIResourceList
	raw, err := c.Raw(ctx, "/api/v1")
	if err != nil {
		return nil, err
	}
	var core metav1.APIResourceList
	if err := json.Unmarshal(raw, &core); err != nil {
		return nil, err
	}
	lists = append(lists, core)
	if raw, err = c.Raw(ctx, "/apis"); err != nil {
		return nil, err
	}
	var groups metav1.APIGroupList
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		raw, err := c.Raw(ctx, "/apis/"+g.PreferredVersion.GroupVersion)
		if err != nil {
			return nil, err
		}
		var l metav1.APIResourceList
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return lists, nil
}
