// Package deploy is the hub controller that installs one addon on one cluster.
//
// Resource: ManagedClusterAddOn (in the cluster namespace) of an addon in the
// hub's framework.Registry; others are left alone. For each it
//
//   - renders the addon's manifests and delivers them as ManifestWorks
//     addon-<name>-deploy-<i> in the cluster namespace (split when one would pass
//     the work size limit), owned by the ManagedClusterAddOn;
//   - grants the agent the hub rights its Registration declares: a Role and
//     RoleBinding open-cluster-management:addon:<name> in the cluster namespace,
//     bound to group system:open-cluster-management:cluster:<c>:addon:<name>
//     (never cluster-wide; a registration asking for more is refused);
//   - renders with the desired configs addons/install set in
//     status.configReferences, only once the addon is Configured and while
//     each config still has its desired spec hash (a changed config waits for
//     this cluster's rollout turn; the works delivered stay), and sets each
//     lastAppliedConfig once the works carrying them are applied and the addon
//     is Available;
//   - publishes status.namespace, registrations, relatedObjects and
//     supportedConfigs, and the conditions ManifestApplied, RegistrationApplied,
//     Progressing, Degraded, and Available (for the WorkField and None health
//     modes; with Lease the klusterlet reports it). Configured is addons/install's.
//
// Finalizer: addon.open-cluster-management.io/addon-pre-delete. On deletion a
// pre-delete hook (manifests labelled open-cluster-management.io/addon-pre-delete)
// is delivered as ManifestWork addon-<name>-pre-delete and must complete before
// the deploy works go and the finalizer is removed.
//
// The decisions (works from manifests, permission checks, conditions) are pure
// functions, table-tested; the Reconciler only reads and writes.
package deploy
