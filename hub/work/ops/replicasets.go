package ops

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset"
	"flotilla.dev/flotilla/internal/printer"
)

// ReplicaSet is one ManifestWorkReplicaSet as `flotilla get works
// --replicaset` shows it: its works' summary and, when it names a
// DistributionPolicy, what the policy did (from the policy's status).
type ReplicaSet struct {
	Namespace  string   `json:"namespace"`
	Name       string   `json:"name"`
	Placements []string `json:"placements"`
	// Summary counts the works (OCM's status.summary).
	Summary workv1alpha1.ManifestWorkReplicaSetSummary `json:"summary"`
	// Policy is the DistributionPolicy it names; empty: none.
	Policy string `json:"policy,omitempty"`
	// PolicyApplied is its DistributionPolicyApplied condition's status,
	// reason and message.
	PolicyApplied *metav1.Condition `json:"policyApplied,omitempty"`
	// Overrides, Failures and Workloads are the replica set's entry in the
	// policy's status: the rules applied per cluster count, the clusters
	// whose render failed, and the divided workloads with their replicas
	// summed over the clusters.
	Overrides []distv1alpha1.OverrideCount  `json:"overrides,omitempty"`
	Failures  []distv1alpha1.RenderFailure  `json:"failures,omitempty"`
	Workloads []distv1alpha1.WorkloadStatus `json:"workloads,omitempty"`
}

// ReplicaSetList is what -o json|yaml prints.
type ReplicaSetList struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Items      []ReplicaSet `json:"items"`
}

// ListReplicaSets reads the ManifestWorkReplicaSets of namespace (all when
// empty), sorted by namespace and name, with their policies.
func ListReplicaSets(ctx context.Context, c client.Client, namespace string) ([]ReplicaSet, error) {
	var list workv1alpha1.ManifestWorkReplicaSetList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list ManifestWorkReplicaSets: %w", err)
	}
	policies := map[string]*distv1alpha1.DistributionPolicy{}
	out := make([]ReplicaSet, 0, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		var p *distv1alpha1.DistributionPolicy
		if name := m.Annotations[distv1alpha1.PolicyAnnotation]; name != "" {
			key := m.Namespace + "/" + name
			if _, read := policies[key]; !read {
				var dp distv1alpha1.DistributionPolicy
				switch err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, &dp); {
				case err == nil:
					policies[key] = &dp
				case client.IgnoreNotFound(err) == nil:
					policies[key] = nil
				default:
					return nil, fmt.Errorf("get DistributionPolicy %s: %w", key, err)
				}
			}
			p = policies[key]
		}
		out = append(out, ReplicaSetView(m, p))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// ReplicaSetView is the view of one replica set and the policy it names
// (nil: none, or not found).
func ReplicaSetView(m *workv1alpha1.ManifestWorkReplicaSet, p *distv1alpha1.DistributionPolicy) ReplicaSet {
	rs := ReplicaSet{Namespace: m.Namespace, Name: m.Name, Summary: m.Status.Summary, Policy: m.Annotations[distv1alpha1.PolicyAnnotation]}
	for _, ref := range m.Spec.PlacementRefs {
		rs.Placements = append(rs.Placements, ref.Name)
	}
	rs.PolicyApplied = meta.FindStatusCondition(m.Status.Conditions, workreplicaset.ConditionDistributionPolicyApplied)
	if p != nil {
		for _, e := range p.Status.ReplicaSets {
			if e.Name == m.Name {
				rs.Overrides, rs.Failures, rs.Workloads = e.Overrides, e.Failures, e.Workloads
			}
		}
	}
	return rs
}

// PrintReplicaSets prints the replica sets with the columns NAMESPACE NAME
// PLACEMENTS CLUSTERS APPLIED AVAILABLE POLICY REPLICAS (ready/available/desired
// per divided workload), or the list as JSON/YAML.
func PrintReplicaSets(w io.Writer, format string, sets []ReplicaSet) error {
	list := &ReplicaSetList{APIVersion: "v1", Kind: "List", Items: sets}
	if list.Items == nil {
		list.Items = []ReplicaSet{}
	}
	return printer.Print(w, format, list, func() printer.Rows {
		rows := printer.Rows{Header: []string{"NAMESPACE", "NAME", "PLACEMENTS", "CLUSTERS", "APPLIED", "AVAILABLE", "POLICY", "REPLICAS"}}
		for _, rs := range sets {
			policy := "-"
			if rs.Policy != "" {
				policy = rs.Policy
				if c := rs.PolicyApplied; c != nil && c.Status != metav1.ConditionTrue {
					policy += " (" + c.Reason + ")"
				}
			}
			replicas := "-"
			if len(rs.Workloads) > 0 {
				var parts []string
				for _, wl := range rs.Workloads {
					parts = append(parts, fmt.Sprintf("%s/%s %d/%d/%d", strings.ToLower(wl.Kind), wl.Name, wl.ReadyReplicas, wl.AvailableReplicas, wl.Desired))
				}
				replicas = strings.Join(parts, ", ")
			}
			rows.Add(rs.Namespace, rs.Name, strings.Join(rs.Placements, ","),
				fmt.Sprintf("%d/%d", rs.Summary.Total, rs.Summary.DesiredTotal), fmt.Sprint(rs.Summary.Applied), fmt.Sprint(rs.Summary.Available),
				policy, replicas)
		}
		return rows
	})
}
