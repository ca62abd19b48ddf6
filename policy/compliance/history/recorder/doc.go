// Package recorder is the hub controller that feeds the compliance history
// store. It reconciles replicated Policies (Policies labelled with
// policy.open-cluster-management.io/root-policy, in cluster namespaces) and
// records every entry of their status.details[].history as a history.Event.
// Only a Policy shaped as a replica (named after its root-policy label, its
// cluster labels equal to its namespace: propagator.IsWellFormedReplica) in
// the namespace of a ManagedCluster is recorded: a Policy anyone labels as
// another root's or another cluster's replica in a namespace they may write
// is not. What a replica's status (its agent's to write) adds is bounded by
// entries: templates of its spec only, the ten newest entries of each, none
// ahead of the hub's clock by more than MaxClockSkew, messages cut at
// MaxMessageBytes.
//
// Work happens on events: a replica is reconciled when it appears (including
// the informer's initial list at hub start) and when its status.details
// change, never on a timer over all policies. Recording is idempotent (the
// store keeps one row per event), so a restarted hub resumes from what the
// replicas hold: entries written while it was down are recorded, entries
// already stored are not duplicated. A replica keeps at most its ten newest
// entries per template, so transitions beyond those while the hub is down are
// not recoverable.
//
// Retention: events older than Options.Retention are not recorded and are
// pruned hourly, except the newest event of each series (its current state).
//
// It owns no conditions and no finalizer; it writes nothing to the apiserver.
package recorder
