// Package propagator is the hub's governance propagator. It reconciles root
// Policies (policy.open-cluster-management.io/v1 Policies without the
// root-policy label) and writes, for every managed cluster a bound Placement
// decides, a replicated Policy named "<rootNamespace>.<rootName>" in the
// cluster's namespace, labelled as Open Cluster Management labels it
// (root-policy, cluster-name, cluster-namespace). A decided cluster the hub
// has not accepted (ocm.Accepted) gets no replica (Inputs.Unaccepted): a
// pending cluster named after an existing namespace must never receive
// policies with resolved hub templates. Replicas go when their
// cluster leaves the decisions, the binding goes, or the root is disabled or
// deleted; a replica edited or deleted by someone else is rewritten.
//
// Bindings: a PlacementBinding binds a Placement to Policies and PolicySets of
// its namespace. bindingOverrides.remediationAction=enforce enforces the
// replicas of the clusters that binding selects; a binding with
// subFilter=restricted places nothing itself, its overrides only reach clusters
// an unrestricted binding of the same policy already selects (see Decide).
//
// Hub templates ({{hub ... hub}}) in the policy templates are resolved per
// cluster before the replica is written (package hubtemplate); a template
// error makes that cluster's replica NonCompliant with the error.
//
// Status: the root's status.placement lists its bindings, status.status each
// cluster's compliance as its replica reports it, and status.compliant the
// aggregate (NonCompliant > Pending > unknown > Compliant).
//
// No finalizer: replicas are found by their root-policy label, so a deleted
// root (even one deleted while the hub was down) has its replicas removed on
// the next event of the root or of any replica. Work happens on events only:
// watches on Policies (roots and replicas), PlacementBindings, PolicySets,
// Placements and PlacementDecisions.
//
// Problems with one policy or binding (a missing Placement, a PlacementRule, a
// name too long for the root-policy label, a replica that cannot be written)
// are Warning events on that Policy and do not stop the others.
package propagator
