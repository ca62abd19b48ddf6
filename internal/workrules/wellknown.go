package workrules

import (
	"sort"

	workv1 "open-cluster-management.io/api/work/v1"
)

// wellKnown are the built-in rules of type WellKnownConditions, by group-kind
// ("Job.batch", "Pod") and condition type. OCM's: Job and Pod Complete.
// Flotilla's own (so a rollout reads on the hub): Deployment Progressing
// and Degraded, Job Degraded.
var wellKnown = map[string]map[string]workv1.ConditionRule{
	"Job.batch": {
		workv1.ManifestComplete: {
			CelExpressions:    []string{`has(object.status) && hasConditions(object.status) ? object.status.conditions.exists(c, (c.type == 'Complete' || c.type == 'Failed') && c.status == 'True') : false`},
			MessageExpression: `result ? "Job is finished" : "Job is not finished"`,
		},
		workv1.ManifestDegraded: {
			CelExpressions:    []string{`has(object.status) && hasConditions(object.status) ? object.status.conditions.exists(c, c.type == 'Failed' && c.status == 'True') : false`},
			MessageExpression: `result ? "Job failed: " + object.status.conditions.filter(c, c.type == 'Failed')[0].message : "Job has not failed"`,
		},
	},
	"Pod": {
		workv1.ManifestComplete: {
			CelExpressions:    []string{`has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']`},
			MessageExpression: `has(object.status) && has(object.status.phase) ? "Pod is in phase " + object.status.phase : "Pod has no phase yet"`,
		},
	},
	"Deployment.apps": {
		// Rolling out: the controller has not seen the latest spec, or not
		// every replica is updated and available, or old replicas remain.
		workv1.ManifestProgressing: {
			CelExpressions: []string{`!has(object.status) || !has(object.status.observedGeneration) || object.status.observedGeneration < object.metadata.generation ||
(has(object.status.updatedReplicas) ? object.status.updatedReplicas : 0) < (has(object.spec.replicas) ? object.spec.replicas : 1) ||
(has(object.status.availableReplicas) ? object.status.availableReplicas : 0) < (has(object.spec.replicas) ? object.spec.replicas : 1) ||
(has(object.status.replicas) ? object.status.replicas : 0) > (has(object.status.updatedReplicas) ? object.status.updatedReplicas : 0)`},
			MessageExpression: `!has(object.status) ? "Deployment has no status yet" : result ? "Deployment is rolling out: " + string(has(object.status.updatedReplicas) ? object.status.updatedReplicas : 0) + " of " + string(has(object.spec.replicas) ? object.spec.replicas : 1) + " replicas updated, " + string(has(object.status.availableReplicas) ? object.status.availableReplicas : 0) + " available" : "Deployment is rolled out"`,
		},
		// Failed: the rollout exceeded its progress deadline, or replicas
		// cannot be created.
		workv1.ManifestDegraded: {
			CelExpressions:    []string{`has(object.status) && hasConditions(object.status) ? object.status.conditions.exists(c, (c.type == 'Progressing' && c.status == 'False' && c.reason == 'ProgressDeadlineExceeded') || (c.type == 'ReplicaFailure' && c.status == 'True')) : false`},
			MessageExpression: `result ? "Deployment is degraded: " + object.status.conditions.filter(c, (c.type == 'Progressing' && c.status == 'False') || (c.type == 'ReplicaFailure' && c.status == 'True'))[0].message : "Deployment is not degraded"`,
		},
	},
}

// WellKnown returns the built-in rule for a group-kind ("Deployment.apps")
// and condition type, with Type CEL and Condition set.
func WellKnown(groupKind, condition string) (workv1.ConditionRule, bool) {
	r, ok := wellKnown[groupKind][condition]
	if !ok {
		return workv1.ConditionRule{}, false
	}
	r.Type, r.Condition = workv1.CelConditionExpressionsType, condition
	r.CelExpressions = append([]string(nil), r.CelExpressions...)
	return r, true
}

// WellKnownFor lists the condition types with a built-in rule for a
// group-kind, sorted.
func WellKnownFor(groupKind string) []string {
	var out []string
	for c := range wellKnown[groupKind] {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
