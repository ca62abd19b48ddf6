// Package chaos is Flotilla's soak-with-faults harness (`make chaos`,
// docs/reliability.md).
//
// A run starts the local environment (devenv: a hub and managed
// clusters as real control planes, `flotilla hub` and one `flotilla klusterlet`
// per cluster as processes), drives a steady stream of ManifestWork creates,
// updates and deletes and ManifestWorkReplicaSet rollouts, and meanwhile kills
// (SIGKILL, by PID) the hub, a klusterlet, a cluster's kube-apiserver or the
// hub's etcd. `devenv.Up` plays the supervisor that restarts what died, as a
// kubelet or systemd would. After every fault the workload pauses and the run
// measures the time until the fleet converges again: every ManifestWork on the
// hub applied at its latest generation and its objects on its cluster exactly
// as its spec says, and nothing left on a cluster that no work asks for.
//
// The invariant checks and the report are pure functions of what the run read
// (this file's package, unit-tested in `make test`); the run itself is the test
// TestChaos behind the build tag `chaos`, so `make test` does not start it.
package chaos
