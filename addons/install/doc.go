// Package install is the hub controller that carries out a
// ClusterManagementAddOn's install strategy and rolls its configs out.
//
// Resource: ClusterManagementAddOn (cluster-scoped; those annotated
// addon.open-cluster-management.io/lifecycle=self are left alone).
//
//   - Install: with installStrategy Placements it creates a
//     ManagedClusterAddOn (controlled by the ClusterManagementAddOn) in the
//     namespace of every cluster the listed Placements decide, and removes the
//     ones it created for clusters no placement decides any more. Decisions
//     that cannot be trusted yet (internal/placementread) remove
//     nothing. With Manual, users create ManagedClusterAddOns.
//   - Configs: each ManagedClusterAddOn's desired configs are
//     framework.DesiredConfigs of the supported defaults, the configs of the
//     (last) placement deciding its cluster, and its own spec.configs; each is
//     read and its spec hashed. They are written to the addon's
//     status.configReferences (desiredConfig) with condition Configured
//     (ConfigurationsConfigured) when its turn comes; until then it is
//     Configured False (ConfigurationsNotConfigured) and keeps what it runs.
//     A config that cannot be used is Configured False (ConfigurationNotFound,
//     ConfigurationUnsupported) on the addons it concerns.
//   - Pace: installs and config changes follow each placement's
//     rolloutStrategy (All, Progressive, ProgressivePerGroup; the planner is
//     hub/workreplicaset/rollout, shared with ManifestWorkReplicaSet); addons
//     no placement decides are one more group rolled out All at once. A cluster
//     is done when its lastAppliedConfig equals its desiredConfig (addons/deploy
//     sets it once the works carrying the configs are applied and the addon is
//     Available).
//
// It writes status.defaultConfigReferences and status.installProgressions
// (configReferences with desired, last applied and last known good configs;
// condition Progressing: Progressing, Completed, Failed). No finalizer: owner
// references remove the created ManagedClusterAddOns with it.
//
// Plan is the pure decision over a Snapshot; the Reconciler reads and writes.
package install
