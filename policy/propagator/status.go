package propagator

import (
	"sort"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Aggregate is the compliance of a set of states with Open Cluster
// Management's precedence: NonCompliant > Pending > unknown > Compliant. An
// unknown state (a cluster that has not reported) is "". No states: "".
func Aggregate(states []policyv1.ComplianceState) policyv1.ComplianceState {
	if len(states) == 0 {
		return ""
	}
	rank := func(s policyv1.ComplianceState) int {
		switch s {
		case policyv1.NonCompliant:
			return 3
		case policyv1.Pending:
			return 2
		case policyv1.Compliant:
			return 0
		}
		return 1
	}
	worst := policyv1.Compliant
	for _, s := range states {
		if rank(s) > rank(worst) {
			worst = s
		}
	}
	if rank(worst) == 1 {
		return ""
	}
	return worst
}

// RootStatus computes a root's status from its decision and the replicas
// found (by cluster). Clusters are sorted by name.
func RootStatus(d Decision, replicas map[string]*policyv1.Policy) policyv1.PolicyStatus {
	st := policyv1.PolicyStatus{Placement: d.Placements}
	clusters := make([]string, 0, len(d.Clusters))
	for c := range d.Clusters {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	var states []policyv1.ComplianceState
	for _, c := range clusters {
		var s policyv1.ComplianceState
		if r := replicas[c]; r != nil {
			s = r.Status.ComplianceState
		}
		states = append(states, s)
		st.Status = append(st.Status, &policyv1.CompliancePerClusterStatus{ComplianceState: s, ClusterName: c, ClusterNamespace: c})
	}
	st.ComplianceState = Aggregate(states)
	return st
}
