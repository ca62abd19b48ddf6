package policyset

import (
	"sort"
	"strings"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// Status computes a set's status from its members (by name; a missing member is
// absent from the map) and the bindings of its namespace. It is pure.
func Status(set *policyv1beta1.PolicySet, members map[string]*policyv1.Policy, bindings []policyv1.PlacementBinding) policyv1beta1.PolicySetStatus {
	var st policyv1beta1.PolicySetStatus
	sorted := append([]policyv1.PlacementBinding(nil), bindings...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, b := range sorted {
		for _, s := range b.Subjects {
			if s.Kind == "PolicySet" && s.Name == set.Name && s.APIGroup == policyv1.GroupName {
				p := policyv1beta1.PolicySetStatusPlacement{PlacementBinding: b.Name}
				if b.PlacementRef.Kind == "PlacementRule" {
					p.PlacementRule = b.PlacementRef.Name
				} else {
					p.Placement = b.PlacementRef.Name
				}
				st.Placement = append(st.Placement, p)
				break
			}
		}
	}
	var disabled, deleted, waiting []string
	states := map[policyv1.ComplianceState]bool{}
	counted := 0
	for _, name := range set.Spec.Policies {
		p := members[string(name)]
		switch {
		case p == nil:
			deleted = append(deleted, string(name))
		case p.Spec.Disabled:
			disabled = append(disabled, string(name))
		default:
			counted++
			s := p.Status.ComplianceState
			if s != policyv1.Compliant && s != policyv1.NonCompliant && s != policyv1.Pending {
				waiting = append(waiting, string(name))
				s = ""
			}
			states[s] = true
		}
	}
	switch {
	case states[policyv1.NonCompliant]:
		st.Compliant = policyv1.NonCompliant
	case states[policyv1.Pending]:
		st.Compliant = policyv1.Pending
	case states[""] || counted == 0:
	default:
		st.Compliant = policyv1.Compliant
	}
	var msgs []string
	if len(disabled) > 0 {
		msgs = append(msgs, "Disabled policies: "+strings.Join(disabled, ", "))
	}
	if len(deleted) > 0 {
		msgs = append(msgs, "Deleted policies: "+strings.Join(deleted, ", "))
	}
	if len(waiting) > 0 && st.Compliant == "" {
		msgs = append(msgs, "No status provided while awaiting policy status: "+strings.Join(waiting, ", "))
	}
	st.StatusMessage = strings.Join(msgs, "; ")
	return st
}
