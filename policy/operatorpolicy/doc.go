// Package operatorpolicy runs the OperatorPolicy engine
// (policy.open-cluster-management.io/v1beta1, the semantics of OCM's
// config-policy-controller OperatorPolicy): it installs and governs an
// operator through the Operator Lifecycle Manager (OLM), and writes the
// policy's status and compliance events.
//
// Resource: OperatorPolicy (namespaced). It owns the whole status:
// compliant, observedGeneration, conditions (upstream's types, reasons and
// messages: ValidPolicySpec, OperatorGroupCompliant, SubscriptionCompliant,
// InstallPlanCompliant, ClusterServiceVersionCompliant,
// CustomResourceDefinitionCompliant, DeploymentCompliant,
// CatalogSourcesUnhealthy, and Compliant summing them up in upstream's
// order), relatedObjects, resolvedSubscriptionLabel and history (newest
// first, at most 10); a compliance Event per change of message (reason
// "policy: <ns>/<name>", on the owning Policy when there is one). No
// finalizer.
//
// The decision is pure: Parse reads the spec (its subscription's
// managed-cluster templates resolved first), Decide takes the Facts the
// runner read (OperatorGroups, the Subscription, InstallPlans, the installed
// CSV, its Deployments and owned CRDs, the CatalogSource) and returns the
// conditions, the compliance and, for enforce, the actions: create the
// OperatorGroup and the Subscription (installPlanApproval Manual: the engine
// approves), update them, approve the InstallPlan whose CSVs are all allowed
// versions when upgradeApproval is Automatic or nothing is installed yet, and
// for mustnothave delete per removalBehavior.
//
// The runner (runner.go) is a controller-runtime controller keyed by policy,
// watching OperatorPolicies and, where OLM is installed, Subscriptions,
// OperatorGroups, InstallPlans, CSVs, CatalogSources and the Deployments OLM
// labels olm.owner. Where the cluster does not serve OLM's APIs, every
// OperatorPolicy is NonCompliant with NoOLMMessage (never a crash, never a
// silent Compliant); the engine starts again when OLM's CRDs appear.
package operatorpolicy
