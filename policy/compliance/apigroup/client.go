package apigroup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// APIServiceName is the group version's APIService.
const APIServiceName = Version + "." + Group

// Client reads the group through the hub apiserver, as the user of a
// kubeconfig (what `kubectl get --raw` does).
type Client struct {
	rest rest.Interface
	apis aggregator.Interface
}

// NewClient returns a client for the hub apiserver at cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	apis, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{rest: cs.Discovery().RESTClient(), apis: apis}, nil
}

// Report reads the report document with the query parameters of
// document.ParseQuery.
func (c *Client) Report(ctx context.Context, q url.Values) (*document.Document, error) {
	doc := &document.Document{}
	return doc, c.get(ctx, ReportsPath, q, doc)
}

// History reads the history document with the query parameters of
// document.ParseHistoryQuery.
func (c *Client) History(ctx context.Context, q url.Values) (*document.HistoryDocument, error) {
	doc := &document.HistoryDocument{}
	return doc, c.get(ctx, HistoriesPath, q, doc)
}

// Verify checks the history's chain on the hub (history.Store's Verify),
// looking for head when it is not "".
func (c *Client) Verify(ctx context.Context, head string) (history.Verification, error) {
	var v history.Verification
	q := url.Values{}
	if head != "" {
		q.Set("head", head)
	}
	return v, c.get(ctx, VerificationsPath, q, &v)
}

func (c *Client) get(ctx context.Context, path string, q url.Values, into any) error {
	req := c.rest.Get().AbsPath(path)
	for k, vs := range q {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	res := req.Do(ctx)
	if err := res.Error(); err != nil { // the server's Status, decoded
		return c.explain(ctx, path, err)
	}
	body, err := res.Raw()
	if err != nil {
		return c.explain(ctx, path, err)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// explain turns a failure into what to do: a 404 or 503 usually means the
// APIService is missing or not Available.
func (c *Client) explain(ctx context.Context, path string, err error) error {
	if !apierrors.IsNotFound(err) && !apierrors.IsServiceUnavailable(err) {
		return fmt.Errorf("%s: %w", path, err)
	}
	hint := "is the hub running, with its aggregated API on (flotilla dev up does it; a hub started by hand needs --api-address <an IP of its host>, a hub deployed with flotilla init --deploy serves it behind its Service)? Or read the hub's database directly with --compliance-db"
	svc, getErr := c.apis.ApiregistrationV1().APIServices().Get(ctx, APIServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(getErr):
		return fmt.Errorf("the hub apiserver has no APIService %s (the hub registers it when it starts): %s: %w", APIServiceName, hint, err)
	case getErr != nil:
		return fmt.Errorf("%s: the APIService %s may not be Available (%v): %s: %w", path, APIServiceName, getErr, hint, err)
	}
	for _, cond := range svc.Status.Conditions {
		if cond.Type == apiregistrationv1.Available && cond.Status != apiregistrationv1.ConditionTrue {
			return fmt.Errorf("the APIService %s is not Available (%s: %s): %s: %w", APIServiceName, cond.Reason, cond.Message, hint, err)
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}
