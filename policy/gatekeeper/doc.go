// Package gatekeeper audits objects against Gatekeeper ConstraintTemplates
// and constraints (templates.gatekeeper.sh/v1, constraints.gatekeeper.sh) with
// no Gatekeeper installed: each template's Rego is compiled once with OPA
// (Rego v0, the dialect of templates written for Gatekeeper v3), and each
// constraint is evaluated against the objects its match selects, with its
// parameters, as Gatekeeper's audit would.
//
// The core is pure: Compile turns a ConstraintTemplate into a Template,
// ParseConstraint a constraint into a Constraint, Audit evaluates constraints
// against a snapshot of objects and returns per-constraint results whose
// Compliance gives the verdict and message. The input each rule sees is
// Gatekeeper's audit review:
//
//	{"review": {"kind": {"group", "version", "kind"}, "name", "namespace",
//	            "operation": "UPDATE", "object": obj},
//	 "parameters": constraint.spec.parameters}
//
// and data.inventory holds the objects of the snapshot in Gatekeeper's
// layout (data.inventory.cluster[groupVersion][kind][name] and
// data.inventory.namespace[namespace][groupVersion][kind][name]) for
// referential templates.
//
// Not supported: external_data (refused when the template is compiled),
// CEL (K8sNativeValidation) code, mutation, and admission-time checks.
package gatekeeper
