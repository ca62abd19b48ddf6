// Package recorder is the hub controller that feeds the compliance history
// store, from two sources recorded into the same rows:
//
//   - replicated Policies (labelled policy.open-cluster-management.io/root-policy,
//     in cluster namespaces): every entry of their status.details[].history;
//   - the compliance Events the managed clusters' framework agents forward to
//     the hub (labelled flotilla.dev/compliance-history=true, on the replica
//     in the cluster's namespace; see governance.HubEvents): every transition,
//     where a replica keeps its ten newest per template. history.FromHubEvent
//     checks that the replica is in the Event's own namespace (a cluster's
//     agent may create Events there only) and takes the cluster from it.
//
// Work happens on events: a replica or forwarded Event is reconciled when it
// appears (including the informers' initial lists at hub start) and a
// replica when its status.details change, never on a timer over all
// policies. Recording is idempotent (the store keeps one row per event, and
// both sources give the same fields for the same transition), so a restarted
// hub resumes from what the apiserver holds: entries and Events written while
// it was down are recorded, those already stored are not duplicated.
//
// Retention: events older than Options.Retention are not recorded and are
// pruned hourly, except the newest event of each series (its current state).
//
// It owns no conditions and no finalizer; it writes nothing to the apiserver.
package recorder
