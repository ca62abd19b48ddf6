// Package configpolicy runs the ConfigurationPolicy engine against one
// cluster: it watches ConfigurationPolicies
// (policy.open-cluster-management.io/v1) and the kinds their templates name,
// evaluates each policy with package evaluate, enforces it when asked, and
// writes its status.
//
// Resource: ConfigurationPolicy (namespaced). It owns the whole status:
// compliant, compliancyDetails (one violation or notification condition per
// template, and a RelatedObjectsTruncated one on a template whose related
// objects were left out to keep the object within what etcd takes),
// relatedObjects, lastEvaluated, lastEvaluatedGeneration and
// history (newest first, at most 10), and a compliance Event per state change
// (reason "policy: <ns>/<name>", message "<State>; <message>" or the
// policy's customMessage, at most 4096 bytes, on the owning Policy when there
// is one, else on the ConfigurationPolicy).
//
// Finalizer: policy.open-cluster-management.io/delete-related-objects, added
// while pruneObjectBehavior is DeleteAll or DeleteIfCreated, so the objects
// of an enforce policy can be pruned before the policy goes.
//
// Evaluation is watch-driven: an informer per kind a template names (started
// on first use), and a change to one object re-queues only the policies whose
// templates can match it (same kind, and same name or no name) or whose
// templates read it (fromSecret, lookup...); namespace
// changes re-queue the policies with a namespaceSelector; a new CRD re-queues
// the policies whose kinds were unknown. evaluationInterval throttles this
// per compliance state ("never": only when the policy's spec changes).
//
// Memory: the informers keep objects without metadata.managedFields (writes
// carry none, so the apiserver keeps its record of them), the policy
// informer keeps policies decoded, and CustomResourceDefinitions are watched
// by their metadata alone (a template naming them starts a whole watch).
//
// Enforce creates missing objects, updates mismatched ones (a server-side
// dry-run first: an update the apiserver would not change anything with is a
// match, not a violation; inform uses the same check) and deletes MustNotHave
// objects. Templates without a name are enforced only with an objectSelector.
//
// The runner's files follow its concerns: runner.go (options, start, queue),
// watch.go (the informers and what they re-queue), reconcile.go (one policy:
// read, throttle, evaluate, enforce), status.go (status and compliance
// events), finalize.go (the finalizer and what it removes), prune.go
// (pruneObjectBehavior) and slim.go (what the caches keep).
package configpolicy
