package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// CreateOptions describes the ManifestWorks to create.
type CreateOptions struct {
	// Name of the ManifestWork (and of the ManifestWorkReplicaSet). Required.
	Name string
	// Manifests the work carries (see LoadManifests). Required.
	Manifests []workv1.Manifest
	// Clusters to create the work for: one ManifestWork in each cluster's
	// namespace. Default: none (then Namespace or Placement decides).
	Clusters []string
	// Namespace is, without ReplicaSet, one more cluster namespace to create the
	// work in (same as naming that cluster in Clusters); with ReplicaSet, the
	// namespace of the ManifestWorkReplicaSet, which must be the Placement's.
	// Default "".
	Namespace string
	// Placement is "namespace/name" of a Placement: the work goes to every
	// cluster in its PlacementDecisions (or, with ReplicaSet, a
	// ManifestWorkReplicaSet follows the Placement). Default "": none.
	Placement string
	// ReplicaSet creates a ManifestWorkReplicaSet for Placement instead of
	// works. Default false.
	ReplicaSet bool
	// DistributionPolicy names, with ReplicaSet, a DistributionPolicy of the
	// placement's namespace that renders each cluster's work (overrides,
	// replica division; the annotation flotilla.dev/distribution-policy).
	// It must exist. Default "": none, every cluster gets the template.
	DistributionPolicy string
	// Overwrite replaces works that already exist. Default false: an existing
	// work is an error and nothing is created.
	Overwrite bool
	// Progress receives one line per work created. Default: nowhere.
	Progress io.Writer
	// SpecOptions set the executor, update strategy, ignored fields, TTL and
	// condition rules (see Spec). Default: none.
	SpecOptions
}

// Created is one object CreateWorks created or replaced.
type Created struct {
	// Kind is ManifestWork or ManifestWorkReplicaSet.
	Kind      string
	Namespace string
	Name      string
	// Replaced is set when an existing object was overwritten.
	Replaced bool
}

// CreateWorks creates the ManifestWorks (or the ManifestWorkReplicaSet)
// described by opts. When a work already exists in any target cluster and
// Overwrite is off, nothing is created.
func CreateWorks(ctx context.Context, c client.Client, opts CreateOptions) ([]Created, error) {
	if errs := validation.IsDNS1123Subdomain(opts.Name); len(errs) > 0 {
		return nil, fmt.Errorf("work name %q is invalid: %s", opts.Name, strings.Join(errs, "; "))
	}
	if len(opts.Manifests) == 0 {
		return nil, errors.New("the work has no manifests: give -f FILE or -f DIR")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	spec, err := Spec(opts.Manifests, opts.SpecOptions)
	if err != nil {
		return nil, err
	}
	if opts.ReplicaSet {
		return createReplicaSet(ctx, c, opts, spec, progress)
	}
	if opts.DistributionPolicy != "" {
		return nil, errors.New("--distribution-policy renders a ManifestWorkReplicaSet's works: give --replicaset --placement ns/name too")
	}

	clusters := append([]string(nil), opts.Clusters...)
	if opts.Namespace != "" {
		clusters = append(clusters, opts.Namespace)
	}
	if opts.Placement != "" {
		decided, err := PlacementClusters(ctx, c, opts.Placement)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "placement %s selected %d cluster(s): %s\n", opts.Placement, len(decided), strings.Join(decided, ", "))
		clusters = append(clusters, decided...)
	}
	clusters = unique(clusters)
	if len(clusters) == 0 {
		return nil, errors.New("no target cluster: give --clusters a,b, -n CLUSTER or --placement ns/name")
	}

	if err := CheckClusters(ctx, c, clusters); err != nil {
		return nil, fmt.Errorf("%w\nnothing was created", err)
	}

	existing := map[string]*workv1.ManifestWork{}
	var conflicts []string
	for _, cl := range clusters {
		w := &workv1.ManifestWork{}
		err := c.Get(ctx, client.ObjectKey{Namespace: cl, Name: opts.Name}, w)
		switch {
		case err == nil:
			existing[cl] = w
			conflicts = append(conflicts, cl)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("cluster %s: %w", cl, err)
		}
	}
	if len(conflicts) > 0 && !opts.Overwrite {
		return nil, fmt.Errorf("work %s already exists in cluster(s) %s: use --overwrite to replace it (nothing was created)",
			opts.Name, strings.Join(conflicts, ", "))
	}

	// Every write is tried as a dry run first (admission included), so one
	// refused cluster leaves all of them untouched.
	var errs []error
	for _, cl := range clusters {
		var err error
		if old, ok := existing[cl]; ok {
			w := old.DeepCopy()
			w.Spec = spec
			err = c.Update(ctx, w, client.DryRunAll)
		} else {
			err = c.Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cl, Name: opts.Name}, Spec: spec}, client.DryRunAll)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: work %s would be refused: %w", cl, opts.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w\nnothing was created", errors.Join(errs...))
	}

	var out []Created
	for _, cl := range clusters {
		if old, ok := existing[cl]; ok {
			old.Spec = spec
			if err := c.Update(ctx, old); err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: replace work %s: %w", cl, opts.Name, err))
				continue
			}
			fmt.Fprintf(progress, "work %s replaced in cluster %s\n", opts.Name, cl)
			out = append(out, Created{Kind: "ManifestWork", Namespace: cl, Name: opts.Name, Replaced: true})
			continue
		}
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cl, Name: opts.Name}, Spec: spec}
		if err := c.Create(ctx, w); err != nil {
			if apierrors.IsNotFound(err) {
				err = fmt.Errorf("namespace %s does not exist on the hub: is %s a registered, accepted cluster? (flotilla get clusters)", cl, cl)
			}
			errs = append(errs, fmt.Errorf("cluster %s: create work %s: %w", cl, opts.Name, err))
			continue
		}
		fmt.Fprintf(progress, "work %s created in cluster %s\n", opts.Name, cl)
		out = append(out, Created{Kind: "ManifestWork", Namespace: cl, Name: opts.Name})
	}
	return out, errors.Join(errs...)
}

// CheckClusters checks that each cluster exists on the hub (its
// ManagedCluster) and has its namespace there, and returns one error naming
// every cluster that does not (nil when all do). A user who may not read
// ManagedClusters or Namespaces is not refused for that: the writes that follow
// find out.
func CheckClusters(ctx context.Context, c client.Client, clusters []string) error {
	var errs []error
	for _, cl := range clusters {
		if errs1 := validation.IsDNS1123Label(cl); len(errs1) > 0 {
			errs = append(errs, fmt.Errorf("cluster %q: not a valid cluster name: %s", cl, strings.Join(errs1, "; ")))
			continue
		}
		err := c.Get(ctx, client.ObjectKey{Name: cl}, &clusterv1.ManagedCluster{})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("cluster %s does not exist: no ManagedCluster %s on the hub (see flotilla get clusters)", cl, cl))
			continue
		case err != nil && !apierrors.IsForbidden(err):
			errs = append(errs, fmt.Errorf("cluster %s: %w", cl, err))
			continue
		}
		err = c.Get(ctx, client.ObjectKey{Name: cl}, &corev1.Namespace{})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("cluster %s has no namespace %s on the hub yet: the hub creates it when the cluster is accepted (flotilla accept --clusters %s)", cl, cl, cl))
		case err != nil && !apierrors.IsForbidden(err):
			errs = append(errs, fmt.Errorf("cluster %s: %w", cl, err))
		}
	}
	return errors.Join(errs...)
}

func createReplicaSet(ctx context.Context, c client.Client, opts CreateOptions, spec workv1.ManifestWorkSpec, progress io.Writer) ([]Created, error) {
	ns, name, err := splitPlacement(opts.Placement)
	if err != nil {
		return nil, fmt.Errorf("--replicaset needs --placement ns/name: %w", err)
	}
	if len(opts.Clusters) > 0 {
		return nil, errors.New("--replicaset follows the placement: do not give --clusters")
	}
	if opts.Namespace != "" && opts.Namespace != ns {
		return nil, fmt.Errorf("a ManifestWorkReplicaSet lives in its placement's namespace %s, not %s", ns, opts.Namespace)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &clusterv1beta1.Placement{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("placement %s/%s not found", ns, name)
		}
		return nil, err
	}
	if opts.DistributionPolicy != "" {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.DistributionPolicy}, &distv1alpha1.DistributionPolicy{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("DistributionPolicy %s/%s not found: create it in the placement's namespace first (kubectl apply -f policy.yaml)", ns, opts.DistributionPolicy)
			}
			return nil, err
		}
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.Name}, rs)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if exists && !opts.Overwrite {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s already exists: use --overwrite to replace it", ns, opts.Name)
	}
	rs.Namespace, rs.Name = ns, opts.Name
	if opts.DistributionPolicy != "" {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[distv1alpha1.PolicyAnnotation] = opts.DistributionPolicy
	} else {
		delete(rs.Annotations, distv1alpha1.PolicyAnnotation)
	}
	rs.Spec.ManifestWorkTemplate = spec
	rs.Spec.PlacementRefs = []workv1alpha1.LocalPlacementReference{{
		Name: name, RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
	}}
	if exists {
		err = c.Update(ctx, rs)
	} else {
		err = c.Create(ctx, rs)
	}
	if err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", ns, opts.Name, err)
	}
	fmt.Fprintf(progress, "ManifestWorkReplicaSet %s/%s for placement %s created; it creates work %s in each selected cluster\n", ns, opts.Name, name, opts.Name)
	if opts.DistributionPolicy != "" {
		fmt.Fprintf(progress, "each cluster's work is rendered with DistributionPolicy %s/%s (flotilla get works --replicaset -n %s shows what it did)\n", ns, opts.DistributionPolicy, ns)
	}
	return []Created{{Kind: "ManifestWorkReplicaSet", Namespace: ns, Name: opts.Name, Replaced: exists}}, nil
}

// PlacementClusters returns the clusters a Placement ("ns/name") decided on,
// from its PlacementDecisions, sorted.
func PlacementClusters(ctx context.Context, c client.Client, placement string) ([]string, error) {
	ns, name, err := splitPlacement(placement)
	if err != nil {
		return nil, err
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &clusterv1beta1.Placement{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("placement %s/%s not found", ns, name)
		}
		return nil, err
	}
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, decisions, client.InNamespace(ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("placement %s/%s decisions: %w", ns, name, err)
	}
	var clusters []string
	for _, d := range decisions.Items {
		for _, cd := range d.Status.Decisions {
			clusters = append(clusters, cd.ClusterName)
		}
	}
	clusters = unique(clusters)
	if len(clusters) == 0 {
		return nil, fmt.Errorf("placement %s/%s has selected no clusters (see `flotilla get placements -n %s`)", ns, name, ns)
	}
	return clusters, nil
}

func splitPlacement(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("placement %q: want namespace/name", s)
	}
	return ns, name, nil
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// ListOptions selects works to list.
type ListOptions struct {
	// Clusters whose works are listed. Default: every namespace.
	Clusters []string
}

// ListWorks returns the works of the given clusters (all clusters when none),
// sorted by cluster and name.
func ListWorks(ctx context.Context, c client.Client, opts ListOptions) ([]workv1.ManifestWork, error) {
	var items []workv1.ManifestWork
	clusters := unique(opts.Clusters)
	if len(clusters) == 0 {
		list := &workv1.ManifestWorkList{}
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("list ManifestWorks: %w", err)
		}
		items = list.Items
	}
	for _, cl := range clusters {
		list := &workv1.ManifestWorkList{}
		if err := c.List(ctx, list, client.InNamespace(cl)); err != nil {
			return nil, fmt.Errorf("list ManifestWorks of cluster %s: %w", cl, err)
		}
		items = append(items, list.Items...)
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	return items, nil
}

// GetWork returns one cluster's work.
func GetWork(ctx context.Context, c client.Client, cluster, name string) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("work %s not found in cluster %s", name, cluster)
		}
		return nil, err
	}
	return w, nil
}

// DeleteOptions selects works to delete.
type DeleteOptions struct {
	// Name of the works. Required.
	Name string
	// Clusters to delete the work from. Required.
	Clusters []string
	// Progress receives one line per work deleted. Default: nowhere.
	Progress io.Writer
}

// DeleteWorks deletes the named work from each cluster. All or nothing: a
// cluster without the work is an error naming it, and then no work is
// deleted. The agent on each cluster removes the work's resources before the
// work disappears.
func DeleteWorks(ctx context.Context, c client.Client, opts DeleteOptions) ([]string, error) {
	clusters := unique(opts.Clusters)
	if opts.Name == "" || len(clusters) == 0 {
		return nil, errors.New("give the work's NAME and --clusters a,b")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	var errs []error
	for _, cl := range clusters {
		err := c.Get(ctx, client.ObjectKey{Namespace: cl, Name: opts.Name}, &workv1.ManifestWork{})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("work %s not found in cluster %s", opts.Name, cl))
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %s: work %s: %w", cl, opts.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w\nnothing was deleted", errors.Join(errs...))
	}
	var deleted []string
	for _, cl := range clusters {
		err := c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cl, Name: opts.Name}})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("work %s not found in cluster %s", opts.Name, cl))
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %s: delete work %s: %w", cl, opts.Name, err))
		default:
			fmt.Fprintf(progress, "work %s deleted from cluster %s (its agent removes the resources first)\n", opts.Name, cl)
			deleted = append(deleted, cl)
		}
	}
	return deleted, errors.Join(errs...)
}
