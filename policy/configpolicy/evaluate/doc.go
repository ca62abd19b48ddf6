// Package evaluate evaluates a ConfigurationPolicy against the objects of a
// cluster, with no client: it reads a Cluster (informer caches in the runner,
// YAML files in `flotilla policy dryrun`) and returns, per object template,
// what it found for each object and the action enforce would take. Status
// turns that into the policy status in upstream config-policy-controller's
// wording and assembly rules (message.go: `namespaces [prod] not found`,
// `... found as specified in namespace x`), with related objects, reasons
// and diffs (diff.go: recordDiff defaults and cut); ComplianceMessage gives
// the event text, with customMessage (custom.go).
//
// The runner applies the planned actions and records their outcome on the
// findings (Finding.Applied, Finding.ApplyError) before calling Status, so the
// messages say what was done (`... was created successfully`).
package evaluate
