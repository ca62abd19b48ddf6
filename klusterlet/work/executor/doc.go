// Package executor applies a ManifestWork as the identity its spec.executor
// names (a ServiceAccount of the managed cluster) instead of the agent's own.
//
// Before each manifest is written, the executor's rights on that object are
// checked with SubjectAccessReviews on the managed cluster (Verbs says which);
// a missing right refuses that manifest with a DeniedError naming the
// executor, the object and the verbs. Writes then go through a client that
// impersonates the executor, so the managed cluster's apiserver enforces the
// same rights again (including RBAC's escalation checks on Roles and
// bindings). The agent's own identity needs `impersonate` on serviceaccounts
// for that.
package executor
