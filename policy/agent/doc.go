// Package agent is governance on the managed cluster: the agents of the two
// governance addons, beside the engines they run. Package addons/governance
// registers the addons (names, manifests, hub rights, health); `flotilla
// addon-agent <addon>` runs these.
//
//   - RunFramework, the governance-policy-framework agent: one controller,
//     keyed by replica name in the cluster namespace, that keeps the managed
//     cluster's side of each replica policy on the hub.
//   - RunConfigPolicy, the config-policy-controller agent: the
//     ConfigurationPolicy engine (policy/configpolicy), the OperatorPolicy
//     engine (policy/operatorpolicy), the CertificatePolicy engine
//     (policy/certpolicy) and, without Gatekeeper, the Rego engine
//     (policy/gatekeeper/live).
//
// Both run the same way (credential.go): with the addon's own hub credential
// (waited for, and the body started again when it rotates) and its Lease
// renewed, and inside watchguard.Run, whose trackers start the body again with
// caches listed afresh when a watch they hang on was cut or went silent (the
// hub and the cluster for the framework, the cluster for the engines).
//
// The framework agent is a controller-runtime manager on the managed cluster
// with the hub beside it as a cluster.Cluster, both caching the cluster
// namespace only. Its watches map every change to the replicas it concerns:
// the replica on the hub, its copy and the ConfigurationPolicies and
// compliance Events on the cluster, and the Gatekeeper objects it delivered
// (watched by label as their kinds appear). Reconcile reads top to bottom:
//
//	get the replica (gone: remove its copy, its templates and its Gatekeeper objects)
//	-> spec sync      (specsync.go: the copy, equal to the replica)
//	-> template sync  (templatesync.go, enginesync.go, gatekeepersync.go: the templates, and each one's state)
//	-> status sync    (statussync.go: the status on the copy and the replica; forward.go: every compliance event to the hub)
//
// The decisions are pure functions with table tests and no apiserver:
// Status and Lagging (status.go), Unmet and DependencyTarget, HubEvents
// (forward.go), GatekeeperObject and GatekeeperCompliance (gatekeeper.go).
// One worker reconciles, so the state kept between passes (since when a
// status lags its events, which events went to the hub, the Gatekeeper
// informers) belongs to it alone. Protected values are decrypted with the
// cluster's key, which the agent copies from the hub (encryption.go).
//
// docs/governance.md describes the behaviour; test/e2e/governance checks it
// on real apiservers, test/e2e/nodes with the agents as Pods.
package agent
