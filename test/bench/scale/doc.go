// Package scale benchmarks one hub holding a fleet: the real `flotilla hub`
// process with thousands of simulated clusters joined, each with its own
// client certificate (the real CSR flow), lease and ClusterClaims, one
// ManifestWork and ten replicated policies each. It reports the time to all
// Joined and Available, to every work Applied and every replica written, the
// hub's CPU and RSS in a steady window, the hub apiserver's and etcd's RSS,
// the lease-update write rate, and fails when the fleet is not correct (a
// cluster not Available, an Available condition leaving True in the steady
// window, a work not Applied, a replica missing). Results: docs/benchmarks.md.
//
// The clusters are in-process agents sharing a few managed apiservers:
//   - registration: the real klusterlet registration agent
//     (klusterlet/registration), one per cluster, with its own agent namespace
//     on its shared apiserver. It creates its ManagedCluster and CSR with the
//     bootstrap token, the hub approves it (--auto-approve-users: the bootstrap
//     user), kube-controller-manager signs, and from then on the agent uses its
//     own certificate: lease renewals, status (Joined, Available, claims),
//     addon rounds, and its two hub watches (its own ManagedCluster and the
//     addons of its namespace), which with the stand-in's watch below are the
//     three a real klusterlet holds. Its ClusterClaims are its own: each cluster's claims carry
//     its name in a label, and its agent's list of claims is narrowed to them
//     (a label selector added by its transport), as if the apiserver held only
//     that cluster's claims.
//   - work: a stand-in per cluster (not klusterlet/work, whose caches of
//     cluster-scoped AppliedManifestWorks and applied kinds would, on a shared
//     apiserver, hold every other cluster's too). With the cluster's own
//     certificate it watches the ManifestWorks of its namespace, adds the
//     agent's finalizer and writes Applied and Available, as the work agent
//     does to the hub; it applies nothing to the managed apiserver.
//   - governance: nothing runs on the clusters; replicas are checked on the hub.
//
// Knobs (environment):
//
//	FLOTILLA_BENCH_CLUSTERS         simulated clusters (default 200)
//	FLOTILLA_BENCH_SPOKES           managed apiservers they share (default 2)
//	FLOTILLA_BENCH_POLICIES         policies placed on every cluster (default 10)
//	FLOTILLA_BENCH_STEADY           the steady window (default 90s)
//	FLOTILLA_BENCH_STATUS_INTERVAL  the agents' status period (default 60s; the agent's own default is 10s)
//	FLOTILLA_BENCH_ADDON_INTERVAL   the agents' addon round period (default 60s; the agent's own default is 5s)
//	FLOTILLA_BENCH_HUB_ARGS         extra `flotilla hub` arguments, space-separated
//	FLOTILLA_BENCH_HEAP_PROFILE     a file: the hub's heap profile at the end of the steady window
//	FLOTILLA_BENCH_CPU_PROFILE      a file: the hub's CPU profile over the steady window
//	FLOTILLA_BENCH_APISERVER_HEAP_PROFILE  a file prefix: the hub kube-apiserver's heap profile (after a
//	                                GC) at the end of each phase, FILE.join, .works, .replicas,
//	                                .steady-window, and its metrics (FILE.<phase>.metrics); its
//	                                profiling is then on (FLOTILLA_APISERVER_PROFILING=true)
//	FLOTILLA_BENCH_STORED_SAMPLES   a folder: the largest object of each resource the hub apiserver stores, at the end
//
// At the end it also logs what the hub apiserver stores beyond a hub without
// clusters, per resource and per cluster (objects, bytes of JSON as listed),
// with the apiserver's watch cache capacities.
package scale
