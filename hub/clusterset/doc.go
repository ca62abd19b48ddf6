// Package clusterset wires the cluster-set controllers:
//
//   - sets: ManagedClusterSet status (ClusterSetEmpty), the built-in `default` and
//     `global` sets, and new clusters joining `default`.
//   - bindings: ManagedClusterSetBinding status (Bound) and the admission check that
//     creating a binding requires `create` on `managedclustersets/bind`.
//   - membership: the pure rule for which clusters a set holds.
package clusterset
