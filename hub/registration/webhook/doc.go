// Package webhook is the hub's admission webhooks for ManagedClusters.
//
// Defaulter (mutating, CREATE): every new ManagedCluster is stored with the
// taint cluster.open-cluster-management.io/unreachable (NoSelect), the taint
// the health controller gives a cluster without an Available condition, so no
// placement decides a cluster before the hub has looked at it; the health
// controller removes it once the agent reports Available=True (OCM's
// semantics). Registered as MutatingWebhookConfiguration flotilla-hub.
//
// Validator (validating; CREATE and UPDATE, not the status subresource). It denies:
//   - setting spec.hubAcceptsClient=true (at create, or turning it on) by a user
//     who may not `update` register.open-cluster-management.io managedclusters/accept;
//   - setting or changing the label cluster.open-cluster-management.io/clusterset by
//     a user who may not `create` managedclustersets/join for that set;
//   - a ManagedCluster whose name is not a DNS label (it becomes a namespace);
//   - a new ManagedCluster without the unreachable NoSelect taint (the
//     mutating webhook was not called: refused rather than decided at once).
//
// Permission checks are SubjectAccessReviews against the hub apiserver, so RBAC
// is the single source of truth. It owns no conditions and no finalizer.
package webhook
