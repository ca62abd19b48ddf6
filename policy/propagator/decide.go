package propagator

import (
	"fmt"
	"sort"
	"strings"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// PlacementGroup is the API group of a Placement in a placementRef.
const PlacementGroup = "cluster.open-cluster-management.io"

// PlacementState is what the hub knows of one Placement's decisions.
type PlacementState struct {
	// Clusters are the clusters its decisions list.
	Clusters []string
	// Missing: the Placement does not exist (it decides nothing).
	Missing bool
	// Unsettled: its decisions are being (re)written; the clusters listed are
	// placed but no replica is removed on its account.
	Unsettled bool
}

// Inputs are the objects of the root's namespace a decision reads.
type Inputs struct {
	Bindings   []policyv1.PlacementBinding
	PolicySets []policyv1beta1.PolicySet
	// Placements by name; a bound placement absent here counts as Missing.
	Placements map[string]PlacementState
	// Unaccepted are decided clusters the hub has not accepted (ocm.Accepted:
	// a pending join, a denied cluster) or that do not exist: they get no
	// replica, whatever a placement decided (the placement controller skips
	// them too; a decision written before it saw the cluster must not leak a
	// replica, with its resolved hub templates, into a namespace of that name).
	Unaccepted map[string]bool
}

// Problem is something wrong with a binding (or the root) that stops some of
// the propagation, for a person to fix.
type Problem struct {
	Binding string // empty for a problem of the root itself
	Message string
}

// Decision is where a root policy goes.
type Decision struct {
	// Clusters maps each cluster that gets a replica to the remediationAction
	// override for it ("" or "enforce").
	Clusters map[string]string
	// Placements is the root's status.placement.
	Placements []*policyv1.Placement
	// Unsettled: a bound placement's decisions are in flux; keep replicas that
	// are not in Clusters for now.
	Unsettled bool
	// Skipped are the decided clusters that get no replica because the hub has
	// not accepted them (Inputs.Unaccepted), sorted.
	Skipped  []string
	Problems []Problem
}

// MaxRootKeyLength is the longest "<namespace>.<name>" of a root policy: the
// value of the root-policy label on its replicas.
const MaxRootKeyLength = 63

// RootKey is the replica name and root-policy label value of a root.
func RootKey(namespace, name string) string { return namespace + "." + name }

// Decide computes where root goes from the bindings, policy sets and placement
// decisions of its namespace. It is pure.
//
// As Open Cluster Management's propagator does: bindings without subFilter
// select clusters (the union of their placements' decisions, directly or
// through a PolicySet that lists the policy); a cluster is enforced when any
// of them that selects it has bindingOverrides.remediationAction=enforce.
// Bindings with subFilter=restricted then only apply their overrides to
// clusters already selected; they add no cluster. A policy bound several ways
// is one replica per cluster. A disabled root goes nowhere but still reports
// its placements. A cluster the hub has not accepted gets no replica
// (Flotilla's rule: OCM's propagator follows the decisions only).
func Decide(root *policyv1.Policy, in Inputs) Decision {
	d := Decision{Clusters: map[string]string{}}
	key := RootKey(root.Namespace, root.Name)
	tooLong := len(key) > MaxRootKeyLength
	if tooLong {
		d.Problems = append(d.Problems, Problem{Message: fmt.Sprintf(
			"namespace and name %q are %d characters, more than the %d a replica's root-policy label can hold: rename the policy",
			key, len(key), MaxRootKeyLength)})
	}
	sets := map[string]bool{} // sets of the namespace that list root
	for _, s := range in.PolicySets {
		for _, p := range s.Spec.Policies {
			if string(p) == root.Name {
				sets[s.Name] = true
			}
		}
	}
	bindings := append([]policyv1.PlacementBinding(nil), in.Bindings...)
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name < bindings[j].Name })

	type bound struct {
		b        *policyv1.PlacementBinding
		clusters []string
	}
	var open, restricted []bound
	for i := range bindings {
		b := &bindings[i]
		via, ok := boundThrough(b, root.Name, sets)
		if !ok {
			continue
		}
		for _, set := range via {
			p := &policyv1.Placement{PlacementBinding: b.Name, PolicySet: set}
			if b.PlacementRef.Kind == "PlacementRule" {
				p.PlacementRule = b.PlacementRef.Name
			} else {
				p.Placement = b.PlacementRef.Name
			}
			d.Placements = append(d.Placements, p)
		}
		clusters, problem := placementClusters(b, in.Placements, &d.Unsettled)
		if problem != "" {
			d.Problems = append(d.Problems, Problem{Binding: b.Name, Message: problem})
		}
		if b.SubFilter == policyv1.Restricted {
			restricted = append(restricted, bound{b, clusters})
		} else {
			open = append(open, bound{b, clusters})
		}
	}
	if root.Spec.Disabled || tooLong {
		return d
	}
	for _, x := range open {
		for _, c := range x.clusters {
			if _, ok := d.Clusters[c]; !ok {
				d.Clusters[c] = ""
			}
			if enforces(x.b) {
				d.Clusters[c] = "enforce"
			}
		}
	}
	for _, x := range restricted {
		if !enforces(x.b) {
			continue
		}
		for _, c := range x.clusters {
			if _, ok := d.Clusters[c]; ok {
				d.Clusters[c] = "enforce"
			}
		}
	}
	for c := range d.Clusters {
		if in.Unaccepted[c] {
			delete(d.Clusters, c)
			d.Skipped = append(d.Skipped, c)
		}
	}
	sort.Strings(d.Skipped)
	return d
}

// DecidedClusters lists, once each and sorted, the clusters the placements
// of in decide: the ones whose acceptance Inputs.Unaccepted must answer for.
func DecidedClusters(in Inputs) []string {
	seen := map[string]bool{}
	var out []string
	for _, st := range in.Placements {
		for _, c := range st.Clusters {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// boundThrough says whether b binds policy, and through what: "" for a direct
// Policy subject, else the PolicySet names (each listed once).
func boundThrough(b *policyv1.PlacementBinding, policy string, sets map[string]bool) ([]string, bool) {
	var via []string
	seen := map[string]bool{}
	for _, s := range b.Subjects {
		if s.APIGroup != policyv1.GroupName {
			continue
		}
		key := ""
		switch {
		case s.Kind == "Policy" && s.Name == policy:
		case s.Kind == "PolicySet" && sets[s.Name]:
			key = s.Name
		default:
			continue
		}
		if !seen[key] {
			seen[key] = true
			via = append(via, key)
		}
	}
	return via, len(via) > 0
}

// placementClusters returns the clusters b's placement decides, or why none.
func placementClusters(b *policyv1.PlacementBinding, states map[string]PlacementState, unsettled *bool) ([]string, string) {
	ref := b.PlacementRef
	if ref.Kind != "Placement" || ref.APIGroup != PlacementGroup {
		return nil, fmt.Sprintf("placementRef %s %s.%s is not supported: bind a Placement (apiGroup %s)",
			ref.Name, ref.Kind, ref.APIGroup, PlacementGroup)
	}
	st, ok := states[ref.Name]
	if !ok || st.Missing {
		return nil, fmt.Sprintf("Placement %s/%s not found: it places the policy nowhere until it exists", b.Namespace, ref.Name)
	}
	if st.Unsettled {
		*unsettled = true
	}
	return st.Clusters, ""
}

func enforces(b *policyv1.PlacementBinding) bool {
	return strings.EqualFold(b.BindingOverrides.RemediationAction, string(policyv1.Enforce))
}
