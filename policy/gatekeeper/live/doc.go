// Package live audits Gatekeeper ConstraintTemplates and constraints on a
// cluster that has no Gatekeeper, with package gatekeeper's Rego engine.
//
// Resources: ConstraintTemplates (templates.gatekeeper.sh/v1, cluster-scoped)
// and the constraint kinds they define (constraints.gatekeeper.sh/v1beta1).
// For each template the runner creates the constraint kind's CRD (as
// Gatekeeper does), compiles the Rego once, and writes the template's
// status.created and, for Rego that does not compile, status.byPod[].errors.
// Each constraint gets a status like Gatekeeper's audit (auditTimestamp,
// totalViolations, violations: at most 20) plus Flotilla's compliance:
// status.compliant (Compliant or NonCompliant) and status.message, and a
// compliance Event when the message changes (reason "policy: Kind/name",
// message "<State>; <violation|notification> - <message>").
//
// Evaluation is watch-driven: one informer per kind a constraint matches
// (started on first use), and a change to one object re-evaluates only that
// object against the constraints matching its kind; constraints whose
// template reads data.inventory are audited again in full. A namespace
// change re-audits the constraints with a namespaceSelector. One worker does
// all evaluations, so the engine needs no locks.
package live
