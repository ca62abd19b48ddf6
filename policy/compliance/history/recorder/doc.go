// Package recorder is the hub controller that feeds the compliance history
// store, from two sources recorded into the same rows:
//
//   - replicated Policies (labelled policy.open-cluster-management.io/root-policy,
//     in cluster namespaces): every entry of their status.details[].history;
//   - the compliance Events the managed clusters' framework agents forward to
//     the hub (labelled flotilla.dev/compliance-history=true, on the replica
//     in the cluster's namespace; see agent.HubEvents in policy/agent):
//     every transition, where a replica keeps its ten newest per template.
//     history.FromHubEvent checks that the replica is in the Event's own
//     namespace (a cluster's agent may create Events there only) and takes
//     the cluster from it.
//
// Work happens on events: a replica or forwarded Event is reconciled when it
// appears (including the informers' initial lists at hub start) and a
// replica when its status.details change, never on a timer over all
// policies. Recording is idempotent (the store keeps one row per event, and
// both sources give the same fields for the same transition), so a restarted
// hub resumes from what the apiserver holds: entries and Events written while
// it was down are recorded, those already stored are not duplicated.
//
// Only a Policy shaped as a replica (named after its root-policy label, its
// cluster labels equal to its namespace: propagator.IsWellFormedReplica) in
// the namespace of a ManagedCluster is recorded, from either source: a Policy
// anyone labels as another root's or another cluster's replica in a
// namespace they may write is not. What a replica's status (its agent's to
// write) adds is bounded by entries: templates of its spec only, the ten
// newest entries of each, none ahead of the hub's clock by more than
// MaxClockSkew, messages cut at MaxMessageBytes; a forwarded Event ahead of
// the clock is not recorded and its message is cut the same way.
//
// Retention: events older than Options.Retention are not recorded and are
// pruned hourly, except the newest event of each series (its current state).
//
// It owns no conditions and no finalizer; it writes nothing to the apiserver.
package recorder
