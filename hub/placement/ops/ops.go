package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

// CreateOptions describes a Placement to create.
type CreateOptions struct {
	// Name of the Placement. Required.
	Name string
	// Namespace of the Placement. Default "default".
	Namespace string
	// ClusterSets restricts selection to these bound sets. Default: all bound sets.
	ClusterSets []string
	// Labels the clusters must carry (one predicate, ANDed). Default: none.
	Labels map[string]string
	// NumberOfClusters caps the selection. Default nil: every matching cluster.
	NumberOfClusters *int32
	// Claims the clusters must carry, as claim name to value (ANDed with
	// Labels in the same predicate). Default: none.
	Claims map[string]string
	// CEL expressions the clusters must satisfy (variable managedCluster;
	// ANDed in the same predicate). Default: none.
	CEL []string
	// Prioritizers in clusteradm's form: BuiltIn:NAME:WEIGHT or
	// AddOn:RESOURCE:SCORE:WEIGHT. Default: none (Balance and Steady, weight 1).
	Prioritizers []string
	// Exact makes only the listed prioritizers count (mode Exact). Default
	// false: Additive.
	Exact bool
	// SortByScore orders decisions by score and records scores. Default
	// false: by cluster name.
	SortByScore bool
	// ScoreRateLimit is spec.scoreRateLimit ("30s", "5m", "1h"). Default "":
	// the API's 1m.
	ScoreRateLimit string
}

// Spec builds the Placement spec of opts and checks it as the hub's admission
// does, so a mistake is named before anything is written.
func Spec(opts CreateOptions) (clusterv1beta1.PlacementSpec, error) {
	spec := clusterv1beta1.PlacementSpec{ClusterSets: opts.ClusterSets, NumberOfClusters: opts.NumberOfClusters, ScoreRateLimit: opts.ScoreRateLimit}
	if len(opts.Labels)+len(opts.Claims)+len(opts.CEL) > 0 {
		sel := clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: opts.Labels},
			CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: opts.CEL}}
		for _, k := range sortedKeys(opts.Claims) {
			sel.ClaimSelector.MatchExpressions = append(sel.ClaimSelector.MatchExpressions,
				metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{opts.Claims[k]}})
		}
		spec.Predicates = []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: sel}}
	}
	if opts.Exact {
		spec.PrioritizerPolicy.Mode = clusterv1beta1.PrioritizerPolicyModeExact
	}
	for _, pr := range opts.Prioritizers {
		c, err := parsePrioritizer(pr)
		if err != nil {
			return spec, err
		}
		spec.PrioritizerPolicy.Configurations = append(spec.PrioritizerPolicy.Configurations, c)
	}
	if opts.SortByScore {
		spec.SortBy = clusterv1beta1.PlacementSortByScore
	}
	if r := opts.ScoreRateLimit; r != "" && !scoreRateLimit.MatchString(r) {
		return spec, fmt.Errorf("--score-rate-limit %q: want a number followed by h, m or s (30s, 5m, 1h)", r)
	}
	if problems := scheduling.DefaultRegistry().Validate(&clusterv1beta1.Placement{Spec: spec}); len(problems) > 0 {
		return spec, fmt.Errorf("the placement would be invalid: %s", strings.Join(problems, "; "))
	}
	return spec, nil
}

var scoreRateLimit = regexp.MustCompile(`^[0-9]+[hms]$`)

// parsePrioritizer reads clusteradm's --prioritizers form.
func parsePrioritizer(s string) (clusterv1beta1.PrioritizerConfig, error) {
	parts := strings.Split(s, ":")
	weight := func(w string) (int32, error) {
		n, err := strconv.ParseInt(w, 10, 32)
		if err != nil || n < -10 || n > 10 {
			return 0, fmt.Errorf("--prioritizers %q: the weight must be a whole number from -10 to 10", s)
		}
		return int32(n), nil
	}
	switch {
	case len(parts) == 3 && parts[0] == clusterv1beta1.ScoreCoordinateTypeBuiltIn:
		w, err := weight(parts[2])
		return clusterv1beta1.PrioritizerConfig{ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: parts[1]}, Weight: w}, err
	case len(parts) == 4 && parts[0] == clusterv1beta1.ScoreCoordinateTypeAddOn:
		w, err := weight(parts[3])
		return clusterv1beta1.PrioritizerConfig{ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeAddOn, AddOn: &clusterv1beta1.AddOnScore{ResourceName: parts[1], ScoreName: parts[2]}}, Weight: w}, err
	}
	return clusterv1beta1.PrioritizerConfig{}, fmt.Errorf("--prioritizers %q: want BuiltIn:NAME:WEIGHT or AddOn:RESOURCE:SCORE:WEIGHT", s)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CreatePlacement creates the Placement and returns it.
func CreatePlacement(ctx context.Context, c client.Client, opts CreateOptions) (*clusterv1beta1.Placement, error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if errs := validation.IsDNS1123Subdomain(opts.Name); len(errs) > 0 {
		return nil, fmt.Errorf("placement name %q is invalid: %s", opts.Name, strings.Join(errs, "; "))
	}
	if opts.NumberOfClusters != nil && *opts.NumberOfClusters < 0 {
		return nil, fmt.Errorf("--number %d must not be negative", *opts.NumberOfClusters)
	}
	spec, err := Spec(opts)
	if err != nil {
		return nil, err
	}
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace}, Spec: spec}
	if err := c.Create(ctx, p); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("placement %s/%s already exists", opts.Namespace, opts.Name)
		}
		return nil, fmt.Errorf("create placement %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	return p, nil
}

// PlacementView is a Placement with the clusters its decisions select.
type PlacementView struct {
	clusterv1beta1.Placement `json:",inline"`
	// SelectedClusters are the decided clusters, sorted.
	SelectedClusters []string `json:"selectedClusters"`
}

// ListOptions selects Placements to list.
type ListOptions struct {
	// Namespace to list in. Default "": all namespaces.
	Namespace string
}

// ListPlacements returns the Placements with their selected clusters, sorted by
// namespace and name.
func ListPlacements(ctx context.Context, c client.Client, opts ListOptions) ([]PlacementView, error) {
	var ps clusterv1beta1.PlacementList
	if err := c.List(ctx, &ps, client.InNamespace(opts.Namespace)); err != nil {
		return nil, fmt.Errorf("list placements: %w", err)
	}
	var ds clusterv1beta1.PlacementDecisionList
	if err := c.List(ctx, &ds, client.InNamespace(opts.Namespace)); err != nil {
		return nil, fmt.Errorf("list placement decisions: %w", err)
	}
	decided := map[string][]string{}
	for _, d := range ds.Items {
		key := d.Namespace + "/" + d.Labels[clusterv1beta1.PlacementLabel]
		for _, cd := range d.Status.Decisions {
			decided[key] = append(decided[key], cd.ClusterName)
		}
	}
	out := make([]PlacementView, 0, len(ps.Items))
	for _, p := range ps.Items {
		p.APIVersion, p.Kind = clusterv1beta1.GroupVersion.String(), "Placement"
		clusters := decided[p.Namespace+"/"+p.Name]
		sort.Strings(clusters)
		if clusters == nil {
			clusters = []string{}
		}
		out = append(out, PlacementView{Placement: p, SelectedClusters: clusters})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// SetOptions puts clusters into a set.
type SetOptions struct {
	// Set is the ManagedClusterSet. Created (ExclusiveClusterSetLabel) when missing. Required.
	Set string
	// Clusters to move into the set. Required.
	Clusters []string
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// SetClusterSet labels each cluster cluster.open-cluster-management.io/clusterset=<set>,
// creating the set first if needed. All or nothing: when a cluster is missing
// or its move would be refused, every such cluster is reported and nothing is
// changed (no set created, no cluster moved).
func SetClusterSet(ctx context.Context, c client.Client, opts SetOptions) error {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if errs := validation.IsDNS1123Label(opts.Set); len(errs) > 0 {
		return fmt.Errorf("cluster set name %q is invalid: %s", opts.Set, strings.Join(errs, "; "))
	}
	if len(opts.Clusters) == 0 {
		return errors.New("name at least one cluster with --clusters")
	}
	var set clusterv1beta2.ManagedClusterSet
	err := c.Get(ctx, client.ObjectKey{Name: opts.Set}, &set)
	missing := apierrors.IsNotFound(err)
	switch {
	case missing:
	case err != nil:
		return fmt.Errorf("get ManagedClusterSet %q: %w", opts.Set, err)
	case set.Spec.ClusterSelector.SelectorType != "" && set.Spec.ClusterSelector.SelectorType != clusterv1beta2.ExclusiveClusterSetLabel:
		return fmt.Errorf("ManagedClusterSet %q selects clusters by %s; change the clusters' labels to match its selector instead", opts.Set, set.Spec.ClusterSelector.SelectorType)
	}

	// All or nothing: every cluster is read, and its move tried as a dry run
	// (the hub's admission included), before the set is created or any
	// cluster moved.
	type move struct {
		mc    *clusterv1.ManagedCluster
		patch client.Patch
	}
	var moves []move
	var errs []error
	for _, name := range opts.Clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				err = fmt.Errorf("cluster %q not found", name)
			}
			errs = append(errs, err)
			continue
		}
		if mc.Labels[clusterv1beta2.ClusterSetLabel] == opts.Set {
			moves = append(moves, move{mc: mc})
			continue
		}
		patch := client.MergeFrom(mc.DeepCopy())
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[clusterv1beta2.ClusterSetLabel] = opts.Set
		if err := c.Patch(ctx, mc.DeepCopy(), patch, client.DryRunAll); err != nil {
			errs = append(errs, fmt.Errorf("move cluster %q into set %q: %w", name, opts.Set, err))
			continue
		}
		moves = append(moves, move{mc: mc, patch: patch})
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w\nno cluster was moved", errors.Join(errs...))
	}

	if missing {
		set = clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: opts.Set}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}}}
		if err := c.Create(ctx, &set); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ManagedClusterSet %q: %w", opts.Set, err)
		}
		fmt.Fprintf(opts.Progress, "ManagedClusterSet %q created\n", opts.Set)
	}
	for _, m := range moves {
		if m.patch == nil {
			fmt.Fprintf(opts.Progress, "cluster %s is already in set %s\n", m.mc.Name, opts.Set)
			continue
		}
		if err := c.Patch(ctx, m.mc, m.patch); err != nil {
			errs = append(errs, fmt.Errorf("move cluster %q into set %q: %w", m.mc.Name, opts.Set, err))
			continue
		}
		fmt.Fprintf(opts.Progress, "cluster %s moved into set %s\n", m.mc.Name, opts.Set)
	}
	return errors.Join(errs...)
}

// BindOptions binds a set to a namespace.
type BindOptions struct {
	// Set is the ManagedClusterSet to bind. Required.
	Set string
	// Namespace to bind it to. Default "default".
	Namespace string
}

// BindClusterSet creates the ManagedClusterSetBinding <set> in the namespace. It
// is not an error when the binding already exists. The hub refuses the binding
// when the caller may not create managedclustersets/bind for the set.
func BindClusterSet(ctx context.Context, c client.Client, opts BindOptions) (created bool, err error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.Set == "" {
		return false, errors.New("name the cluster set to bind")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: opts.Namespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("namespace %q does not exist on the hub; create it first", opts.Namespace)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: opts.Set}, &clusterv1beta2.ManagedClusterSet{}); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("ManagedClusterSet %q does not exist; create it with `flotilla clusterset set %s --clusters ...`", opts.Set, opts.Set)
	}
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: opts.Set, Namespace: opts.Namespace},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: opts.Set}}
	if err := c.Create(ctx, b); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("bind ManagedClusterSet %q to namespace %q: %w", opts.Set, opts.Namespace, err)
	}
	return true, nil
}

// DecidedClusters returns the clusters placement namespace/name currently selects,
// sorted. It fails when the Placement does not exist; a Placement without decisions
// yet yields no clusters. (Used by `flotilla create work --placement`.)
func DecidedClusters(ctx context.Context, c client.Client, namespace, name string) ([]string, error) {
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &clusterv1beta1.Placement{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("placement %s/%s not found", namespace, name)
		}
		return nil, fmt.Errorf("get placement %s/%s: %w", namespace, name, err)
	}
	var ds clusterv1beta1.PlacementDecisionList
	if err := c.List(ctx, &ds, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("list decisions of placement %s/%s: %w", namespace, name, err)
	}
	out := []string{}
	for _, d := range ds.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	sort.Strings(out)
	return out, nil
}
