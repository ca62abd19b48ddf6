package placementread

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Readiness of a placement's decisions, as a consumer sees it.
type Readiness int

const (
	// Ready: the decisions are the placement's current answer.
	Ready Readiness = iota
	// InFlux: the placement has answered, but the decisions listed do not add
	// up to what its status says (its controller is between writes, or the
	// cache is behind). Roll out to what is listed, delete nothing.
	InFlux
	// Unknown: the placement has not answered for its current spec yet.
	// Touch nothing.
	Unknown
)

func (r Readiness) String() string {
	switch r {
	case Ready:
		return "Ready"
	case InFlux:
		return "InFlux"
	case Unknown:
		return "Unknown"
	}
	return fmt.Sprintf("Readiness(%d)", int(r))
}

// Cluster is one decided cluster with its decision group.
type Cluster struct {
	Name       string
	GroupIndex int32
	GroupName  string
}

// Decisions is what Read found.
type Decisions struct {
	// Found: the Placement exists. When false, nothing else is set.
	Found bool
	// Placement is the Placement read.
	Placement clusterv1beta1.Placement
	// Readiness says whether Clusters can be trusted (see Check).
	Readiness Readiness
	// Reason explains any Readiness but Ready, for a condition's message
	// ("has not published decisions for its current spec yet").
	Reason string
	// Own are the PlacementDecisions that belong to the Placement.
	Own []clusterv1beta1.PlacementDecision
	// Clusters are the clusters Own decides (see Clusters).
	Clusters []Cluster
}

// ReadError is the error of Read: which of its two reads failed.
type ReadError struct {
	// Decisions: listing the PlacementDecisions failed; otherwise getting the
	// Placement did.
	Decisions       bool
	Namespace, Name string
	Err             error
}

func (e *ReadError) Error() string {
	if e.Decisions {
		return fmt.Sprintf("list PlacementDecisions of %s/%s: %v", e.Namespace, e.Name, e.Err)
	}
	return fmt.Sprintf("get Placement %s/%s: %v", e.Namespace, e.Name, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// Cause is the failure itself of a *ReadError (the apiserver's or the cache's,
// without what Read was reading), for a consumer that words its own reason;
// any other error as it is.
func Cause(err error) error {
	var re *ReadError
	if errors.As(err, &re) {
		return re.Err
	}
	return err
}

// Read gets the Placement namespace/name and lists its PlacementDecisions. A
// Placement that does not exist is no error: Found is false. Any other failure
// is a *ReadError (with what was read so far: Found and Placement after a
// failed list).
func Read(ctx context.Context, c client.Reader, namespace, name string) (Decisions, error) {
	var out Decisions
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &out.Placement); err != nil {
		out.Placement = clusterv1beta1.Placement{}
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		return out, &ReadError{Namespace: namespace, Name: name, Err: err}
	}
	out.Found = true
	var list clusterv1beta1.PlacementDecisionList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return out, &ReadError{Decisions: true, Namespace: namespace, Name: name, Err: err}
	}
	out.Readiness, out.Reason, out.Own = Check(&out.Placement, list.Items)
	out.Clusters = Clusters(out.Own)
	return out, nil
}

// Check says whether decisions (the PlacementDecisions labelled with p's name)
// can be trusted as p's current answer, and returns the ones that belong to p:
// pages controlled by another Placement of the same name (a deleted
// predecessor, not yet garbage collected) are dropped. why explains anything
// but Ready. A placement whose scheduling is disabled
// (PlacementDisableAnnotation: another scheduler writes its decisions) is
// trusted as listed.
func Check(p *clusterv1beta1.Placement, decisions []clusterv1beta1.PlacementDecision) (r Readiness, why string, own []clusterv1beta1.PlacementDecision) {
	for _, d := range decisions {
		if ref := metav1.GetControllerOf(&d); ref != nil && ref.UID != p.UID {
			continue
		}
		own = append(own, d)
	}
	if _, off := p.Annotations[clusterv1beta1.PlacementDisableAnnotation]; off {
		return Ready, "", own
	}
	sat := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
	if sat == nil || sat.ObservedGeneration != p.Generation {
		return Unknown, "has not published decisions for its current spec yet", own
	}
	seen := map[string]bool{}
	for _, d := range own {
		for _, cd := range d.Status.Decisions {
			seen[cd.ClusterName] = true
		}
	}
	if len(seen) != int(p.Status.NumberOfSelectedClusters) {
		return InFlux, fmt.Sprintf("decisions list %d clusters, its status %d: they are being rewritten", len(seen), p.Status.NumberOfSelectedClusters), own
	}
	return Ready, "", own
}

// Clusters lists the clusters the pages decide, once each, in page order, with
// the decision group (labels decision-group-index and decision-group-name) of
// the first page that lists them. A page without a group index is group 0.
func Clusters(pages []clusterv1beta1.PlacementDecision) []Cluster {
	var out []Cluster
	seen := map[string]bool{}
	for _, d := range pages {
		idx, _ := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
		for _, cd := range d.Status.Decisions {
			if seen[cd.ClusterName] {
				continue
			}
			seen[cd.ClusterName] = true
			out = append(out, Cluster{Name: cd.ClusterName, GroupIndex: int32(idx), GroupName: d.Labels[clusterv1beta1.DecisionGroupNameLabel]})
		}
	}
	return out
}
