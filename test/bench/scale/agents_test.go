package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// clusterLabel on a ClusterClaim names the simulated cluster it belongs to.
const clusterLabel = "bench.flotilla.dev/cluster"

// ownClaims narrows a spoke config's ClusterClaim lists to one cluster's
// claims, so agents sharing a managed apiserver each see only their own. On
// the shared apiserver cluster c's claim n is stored as "c.n", labelled
// clusterLabel=c; each list gets that label selector and the names in the
// answer lose the "c." prefix.
func ownClaims(cfg *rest.Config, cluster string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return claimsOf{next: rt, cluster: cluster} })
	return cfg
}

type claimsOf struct {
	next    http.RoundTripper
	cluster string
}

func (c claimsOf) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/clusterclaims") {
		r = r.Clone(r.Context())
		q := r.URL.Query()
		q.Set("labelSelector", clusterLabel+"="+c.cluster)
		r.URL.RawQuery = q.Encode()
		resp, err := c.next.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var list clusterv1alpha1.ClusterClaimList
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("ClusterClaim list of %s: %w", c.cluster, err)
		}
		for i := range list.Items {
			list.Items[i].Name = strings.TrimPrefix(list.Items[i].Name, c.cluster+".")
		}
		if body, err = json.Marshal(&list); err != nil {
			return nil, err
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	return c.next.RoundTrip(r)
}

// playWorkAgent stands in for the cluster's work agent on the hub, with the
// cluster's own credential (hub): it watches the ManifestWorks of the
// cluster's namespace, adds the agent's finalizer and reports Applied and
// Available for the work's generation, until ctx ends.
func playWorkAgent(ctx context.Context, hub *rest.Config, cluster string, errs chan<- error) {
	cs, err := workclient.NewForConfig(hub)
	if err != nil {
		errs <- err
		return
	}
	api := cs.WorkV1().ManifestWorks(cluster)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return api.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	}
	handle := func(obj any) {
		w, ok := obj.(*workv1.ManifestWork)
		if !ok || reported(w) {
			return
		}
		if err := applyWork(ctx, cs, w); err != nil && ctx.Err() == nil {
			select {
			case errs <- fmt.Errorf("cluster %s, work %s: %w", cluster, w.Name, err):
			default:
			}
		}
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &workv1.ManifestWork{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, n any) { handle(n) }}})
	inf.RunWithContext(ctx)
}

// reported: the work carries the finalizer and Applied for its generation.
func reported(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return hasFinalizer(w) && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

func hasFinalizer(w *workv1.ManifestWork) bool {
	for _, f := range w.Finalizers {
		if f == workv1.ManifestWorkFinalizer {
			return true
		}
	}
	return false
}

// applyWork writes what the work agent writes for a new work: its finalizer,
// then Applied and Available with a condition per manifest.
func applyWork(ctx context.Context, cs workclient.Interface, w *workv1.ManifestWork) error {
	api := cs.WorkV1().ManifestWorks(w.Namespace)
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := api.Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			w = fresh
		}
		first = false
		w = w.DeepCopy()
		if !hasFinalizer(w) {
			w.Finalizers = append(w.Finalizers, workv1.ManifestWorkFinalizer)
			updated, err := api.Update(ctx, w, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			w = updated
		}
		now := metav1.Now()
		for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
				Reason: "AppliedManifestWorkComplete", Message: "Apply manifest work complete", ObservedGeneration: w.Generation, LastTransitionTime: now})
		}
		w.Status.ResourceStatus.Manifests = nil
		for i := range w.Spec.Workload.Manifests {
			w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Version: "v1", Kind: "ConfigMap", Resource: "configmaps",
					Name: "bench", Namespace: "default"},
				Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete",
					Message: "Apply manifest complete", LastTransitionTime: now}},
			})
		}
		_, err := api.UpdateStatus(ctx, w, metav1.UpdateOptions{})
		return err
	})
}
