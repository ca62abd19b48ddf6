// Package apigroup serves the fleet search as the aggregated API group
// search.flotilla.dev/v1alpha1 (on internal/aggregated, beside the
// compliance API):
//
//   - syncs, namespaced by cluster: a cluster's search agent posts its
//     objects (api/search/v1alpha1.Sync). Only that cluster's search agent
//     may write there: the hub apiserver checks the agent's RBAC (create on
//     syncs in its cluster namespace, from the addon's registration), and
//     the handler checks again that the user is the agent of the namespace's
//     cluster.
//   - resources: a Kubernetes API below it, read-only. A kubeconfig whose
//     server is https://<hub>/apis/search.flotilla.dev/v1alpha1/resources
//     makes `kubectl get pods -A` list the Pods of every cluster the user may
//     see, with a CLUSTER column. A user sees a cluster's objects only if
//     they may get its ManagedCluster.
package apigroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/cleanup"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/search/object"
	"flotilla.dev/flotilla/search/searchapi"
)

// The group version, its resources and their paths under the hub apiserver
// (searchapi's, the client side's).
const (
	Group         = searchapi.Group
	Version       = searchapi.Version
	Syncs         = searchapi.Syncs
	Resources     = searchapi.Resources
	ResourcesPath = searchapi.ResourcesPath
)

// Limits of one Sync (searchapi's).
const (
	MaxSyncBytes     = searchapi.MaxSyncBytes
	MaxSyncResources = searchapi.MaxSyncResources
)

// Options configures the group. Every field documents its default.
type Options struct {
	// Index is the store. Required.
	Index *index.Store
	// Reader reads the hub's ManagedClusters (the hub's cache), for
	// clusterSelector, and a writer's ManagedCluster and search
	// ManagedClusterAddOn (a cluster that no longer syncs writes nothing).
	// Required.
	Reader client.Reader
	// Access says which clusters a user may see (NewAccess). Required.
	Access Access
	// Now is the clock (ages in tables). Default time.Now.
	Now func() time.Time
}

// New returns the group for the aggregated server.
func New(o Options) (aggregated.Group, error) {
	if o.Index == nil || o.Reader == nil || o.Access == nil {
		return aggregated.Group{}, errors.New("search API: Options.Index, Reader and Access are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handlers{o: o}
	return aggregated.Group{
		Name: Group, Version: Version, AllAuthenticated: true,
		Resources: []aggregated.Resource{
			{Name: Syncs, SingularName: "sync", Kind: "Sync", Namespaced: true, Create: true, MaxBodyBytes: MaxSyncBytes, Handler: h.sync},
			{Name: Resources, SingularName: "resource", Kind: "Resource", Handler: h.resources},
			{Name: UI, Kind: "SearchPage", Handler: h.ui},
		},
	}, nil
}

type handlers struct {
	o Options
	// writes serialises the Syncs of one cluster (an agent that restarts
	// may post while its former self's last post is in flight).
	writes sync.Map // cluster -> *sync.Mutex
}

// sync stores a cluster agent's Sync.
func (h *handlers) sync(w http.ResponseWriter, req *http.Request, u user.Info) {
	cluster := aggregated.Namespace(req)
	if req.Method != http.MethodPost {
		aggregated.Error(w, http.StatusMethodNotAllowed, errors.New("syncs are written (POST) by search agents, not read"))
		return
	}
	if strings.TrimSuffix(req.URL.Path, "/") != searchapi.SyncsPath(cluster) {
		aggregated.Error(w, http.StatusNotFound, fmt.Errorf("post a Sync to %s", searchapi.SyncsPath(cluster)))
		return
	}
	if !isAgentOf(u, cluster) {
		aggregated.Error(w, http.StatusForbidden, fmt.Errorf("%s is not the %s agent of cluster %q: only a cluster's own search agent writes its objects", u.GetName(), ocm.SearchAddon, cluster))
		return
	}
	var in searchv1alpha1.Sync
	dec := json.NewDecoder(req.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			aggregated.Error(w, http.StatusRequestEntityTooLarge, fmt.Errorf("a Sync holds at most %d bytes: send fewer objects at a time", MaxSyncBytes))
			return
		}
		aggregated.Error(w, http.StatusBadRequest, fmt.Errorf("the body is not a Sync: %v", err))
		return
	}
	mu, _ := h.writes.LoadOrStore(cluster, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	ctx := req.Context()
	if ok, err := h.syncing(ctx, cluster); err != nil || !ok {
		h.notSyncing(w, cluster, err)
		return
	}
	out, err := Apply(ctx, h.o.Index, cluster, &in)
	if err == nil {
		// The cleanup may have removed the cluster while this was written
		// (its addon or ManagedCluster went): what was written goes too.
		var ok bool
		if ok, err = h.syncing(ctx, cluster); err == nil && !ok {
			if err = h.o.Index.DeleteCluster(ctx, cluster); err == nil {
				h.notSyncing(w, cluster, nil)
				return
			}
		}
	}
	if err != nil {
		code := http.StatusServiceUnavailable
		switch {
		case errors.Is(err, ErrBadSync):
			code = http.StatusBadRequest
		case errors.Is(err, index.ErrOverLimit):
			// As a namespace's exceeded ResourceQuota is answered.
			code = http.StatusForbidden
		}
		aggregated.Error(w, code, err)
		return
	}
	writeJSON(w, out)
}

// syncing reports whether cluster still syncs (cleanup.Syncing): a write
// for a cluster whose ManagedCluster or search addon is gone, or going,
// would outlive the cleanup.
func (h *handlers) syncing(ctx context.Context, cluster string) (bool, error) {
	var mc clusterv1.ManagedCluster
	var mca addonv1alpha1.ManagedClusterAddOn
	for _, get := range []struct {
		key client.ObjectKey
		obj client.Object
	}{{client.ObjectKey{Name: cluster}, &mc}, {client.ObjectKey{Namespace: cluster, Name: ocm.SearchAddon}, &mca}} {
		if err := h.o.Reader.Get(ctx, get.key, get.obj); apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("read cluster %s's ManagedCluster and search addon: %w", cluster, err)
		}
	}
	return cleanup.Syncing(&mc, &mca), nil
}

func (h *handlers) notSyncing(w http.ResponseWriter, cluster string, err error) {
	if err != nil {
		aggregated.Error(w, http.StatusServiceUnavailable, err)
		return
	}
	aggregated.Error(w, http.StatusForbidden, fmt.Errorf("cluster %q does not sync: its ManagedCluster or its %s ManagedClusterAddOn is gone or being deleted", cluster, ocm.SearchAddon))
}

// ErrBadSync marks a Sync's own mistake (400).
var ErrBadSync = errors.New("bad Sync")

// Apply checks in, cluster's agent's Sync, and writes it to idx: a Check
// is answered from the index, a Delta or Replace is written. Each entry is
// one transaction; an entry that fails stops the rest.
func Apply(ctx context.Context, idx *index.Store, cluster string, in *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error) {
	changes, err := decodeSync(cluster, in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSync, err)
	}
	out := &searchv1alpha1.SyncResult{TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "SyncResult"}, Epoch: idx.Epoch()}
	for i, rs := range in.Resources {
		res := searchv1alpha1.ResourceResult{Group: rs.Group, Version: rs.Version, Resource: rs.Resource}
		c := changes[i]
		switch rs.Mode {
		case searchv1alpha1.ModeCheck:
			have, err := idx.Versions(ctx, cluster, c.Resource.GroupResource())
			if err != nil {
				return nil, err
			}
			res.Stored = len(have)
			if res.InSync = object.Digest(have) == rs.Digest; !res.InSync {
				res.Have = have
			}
		default:
			n, err := idx.Apply(ctx, c)
			if errors.Is(err, index.ErrBadObject) {
				return nil, fmt.Errorf("%w: resources[%d] (%s): %v", ErrBadSync, i, c.Resource.GroupResource(), err)
			}
			if err != nil {
				return nil, fmt.Errorf("resources[%d] (%s): %w", i, c.Resource.GroupResource(), err)
			}
			res.Stored = n
		}
		out.Resources = append(out.Resources, res)
	}
	return out, nil
}

// isAgentOf reports whether u is cluster's search agent: the user
// system:open-cluster-management:cluster:<cluster>:addon:search:agent:<agent>
// in the group of the addon on that cluster, as the addon's registration
// signs it.
func isAgentOf(u user.Info, cluster string) bool {
	if cluster == "" {
		return false
	}
	prefix := ocm.AddonAgentUser(cluster, ocm.SearchAddon, "")
	return strings.HasPrefix(u.GetName(), prefix) && len(u.GetName()) > len(prefix) &&
		slices.Contains(u.GetGroups(), ocm.AddonClusterGroup(cluster, ocm.SearchAddon))
}

// decodeSync checks a Sync and turns its entries into index changes.
func decodeSync(cluster string, in *searchv1alpha1.Sync) ([]index.Change, error) {
	if len(in.Resources) > MaxSyncResources {
		return nil, fmt.Errorf("a Sync holds at most %d resources, this one %d", MaxSyncResources, len(in.Resources))
	}
	seen := map[schema.GroupResource]bool{}
	var out []index.Change
	for i, rs := range in.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		gvr := schema.GroupVersionResource{Group: rs.Group, Version: rs.Version, Resource: rs.Resource}
		if rs.Version == "" || rs.Resource == "" || rs.Kind == "" {
			return nil, fmt.Errorf("%s: version, resource and kind are required", at)
		}
		if seen[gvr.GroupResource()] {
			return nil, fmt.Errorf("%s: %s is given twice", at, gvr.GroupResource())
		}
		seen[gvr.GroupResource()] = true
		c := index.Change{Cluster: cluster, Resource: gvr, Kind: rs.Kind, Namespaced: rs.Namespaced, Deletes: rs.Deletes}
		switch rs.Mode {
		case searchv1alpha1.ModeCheck:
			if len(rs.Upserts) > 0 || len(rs.Deletes) > 0 || len(rs.Digest) != 64 {
				return nil, fmt.Errorf("%s: a Check carries a digest (64 hex digits) and no objects", at)
			}
		case searchv1alpha1.ModeReplace:
			if len(rs.Deletes) > 0 {
				return nil, fmt.Errorf("%s: a Replace carries no deletes (what it does not hold is removed)", at)
			}
			c.Replace = true
		case searchv1alpha1.ModeDelta:
		default:
			return nil, fmt.Errorf("%s: mode %q is not Check, Delta or Replace", at, rs.Mode)
		}
		for j, raw := range rs.Upserts {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw); err != nil {
				return nil, fmt.Errorf("%s.upserts[%d]: %v", at, j, err)
			}
			if rs.Namespaced != (u.GetNamespace() != "") {
				return nil, fmt.Errorf("%s.upserts[%d]: %s %q: a namespaced resource's objects have a namespace, a cluster-scoped one's none", at, j, u.GetKind(), u.GetName())
			}
			c.Upserts = append(c.Upserts, u)
		}
		out = append(out, c)
	}
	return out, nil
}

// resources answers the Kubernetes API below ResourcesPath.
func (h *handlers) resources(w http.ResponseWriter, req *http.Request, u user.Info) {
	r, err := parsePath(strings.TrimPrefix(req.URL.Path, ResourcesPath))
	if err != nil || !strings.HasPrefix(req.URL.Path, ResourcesPath) {
		aggregated.Error(w, http.StatusNotFound, err)
		return
	}
	ctx := req.Context()
	switch r.What {
	case whatVersion:
		writeJSON(w, map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.0-flotilla-search", "platform": "fleet"})
		return
	case whatCoreVersions:
		writeJSON(w, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		return
	}
	known, err := h.o.Index.Resources(ctx)
	if err != nil {
		aggregated.Error(w, http.StatusServiceUnavailable, err)
		return
	}
	if r.What == whatGroups || r.What == whatResources {
		if known, err = h.visibleResources(ctx, u); err != nil {
			aggregated.Error(w, http.StatusServiceUnavailable, err)
			return
		}
		if r.What == whatGroups {
			writeJSON(w, groupList(known))
		} else {
			writeJSON(w, resourceList(known, r.GroupVersion))
		}
		return
	}
	res, ok := find(known, r.GroupVersion, r.Resource)
	if !ok {
		aggregated.Error(w, http.StatusNotFound, fmt.Errorf("the server doesn't have a resource type %q in %s: no cluster syncs it (see docs/search.md for the resources the search agent watches)", r.Resource, r.GroupVersion))
		return
	}
	if !res.Namespaced && r.Namespace != "" {
		aggregated.Error(w, http.StatusNotFound, fmt.Errorf("%s is cluster-scoped: search it without a namespace", r.Resource))
		return
	}
	s, err := parseQuery(req.URL.Query())
	if err != nil {
		aggregated.Error(w, http.StatusBadRequest, err)
		return
	}
	s.Resource = res.GroupResource()
	s.Table = wantsTable(req.Header.Get("Accept"))
	if r.Namespace != "" {
		s.Namespaces = []string{r.Namespace}
	}
	if r.Name != "" {
		s.Names = []string{r.Name}
	}
	page, err := h.search(ctx, u, &s)
	if err != nil {
		aggregated.Error(w, errorCode(err), err)
		return
	}
	if r.What == whatGet {
		switch {
		case len(page.Items) == 0:
			aggregated.Error(w, http.StatusNotFound, fmt.Errorf("%s %q not found in any cluster you may see", r.Resource, r.Name))
		case len(page.Items) == 1 && page.Continue == "":
			writeJSON(w, page.Items[0].Object.Object)
		default:
			// Only clusters the user may see are named (authorize).
			var in []string
			for _, hit := range page.Items {
				in = append(in, hit.Cluster)
			}
			count := fmt.Sprint(len(in))
			if page.Continue != "" {
				count = "more than " + count
			}
			aggregated.Error(w, http.StatusConflict, fmt.Errorf("%s %q is in %s clusters (%s): list it, or name one with -l %s=<cluster>", r.Resource, r.Name, count, strings.Join(in, ", "), ClusterLabel))
		}
		return
	}
	if s.Table {
		writeJSON(w, table(res, page, s.FullObjects, h.o.Now()))
		return
	}
	writeJSON(w, list(res, page))
}

// search runs s for u: narrowed to the clusters u may see, each object
// annotated with its cluster.
func (h *handlers) search(ctx context.Context, u user.Info, s *search) (index.Page, error) {
	if err := h.authorize(ctx, u, s); err != nil {
		return index.Page{}, err
	}
	if s.Nothing {
		s.AllClusters, s.Clusters = false, nil
	}
	page, err := h.o.Index.Search(ctx, s.Query)
	if err != nil {
		return index.Page{}, err
	}
	for _, hit := range page.Items {
		a := hit.Object.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[ClusterLabel] = hit.Cluster
		hit.Object.SetAnnotations(a)
	}
	return page, nil
}

// errorCode is the HTTP status of a search's error: 400 for the query's
// own mistakes, 503 for the rest (the index, the reviews).
func errorCode(err error) int {
	if errors.Is(err, index.ErrBadQuery) {
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// visibleResources are the resources the clusters u may see sync:
// discovery and the page's choice show no more (the kinds of the other
// clusters, their CRDs among them, are theirs).
func (h *handlers) visibleResources(ctx context.Context, u user.Info) ([]index.Resource, error) {
	var scope search
	if err := h.authorize(ctx, u, &scope); err != nil {
		return nil, err
	}
	if scope.AllClusters {
		return h.o.Index.Resources(ctx)
	}
	return h.o.Index.ResourcesIn(ctx, scope.Clusters)
}

// authorize narrows s to the clusters its filters name and u may see.
// Only clusters the index holds are reviewed: a user naming thousands of
// clusters that sync nothing costs the hub apiserver nothing.
func (h *handlers) authorize(ctx context.Context, u user.Info, s *search) error {
	filtered := len(s.ClusterNames) > 0 || s.ClusterSelector != nil
	indexed, err := h.o.Index.Clusters(ctx)
	if err != nil {
		return err
	}
	candidates := indexed
	if filtered {
		set := map[string]bool{}
		for _, n := range s.ClusterNames {
			set[n] = true
		}
		if s.ClusterSelector != nil {
			var mcs clusterv1.ManagedClusterList
			if err := h.o.Reader.List(ctx, &mcs); err != nil {
				return fmt.Errorf("read the ManagedClusters: %w", err)
			}
			picked := map[string]bool{}
			for _, mc := range mcs.Items {
				if s.ClusterSelector.Matches(labels.Set(mc.Labels)) && (len(s.ClusterNames) == 0 || set[mc.Name]) {
					picked[mc.Name] = true
				}
			}
			set = picked
		}
		candidates = slices.DeleteFunc(slices.Clone(indexed), func(n string) bool { return !set[n] })
	}
	all, allowed, err := visible(ctx, h.o.Access, u, candidates)
	if err != nil {
		return err
	}
	switch {
	case all && !filtered:
		s.AllClusters = true
	case all:
		s.Clusters = candidates
	default:
		s.Clusters = allowed
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = json.NewEncoder(w).Encode(v)
}
