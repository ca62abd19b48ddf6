// Package certpolicy runs the CertificatePolicy engine
// (policy.open-cluster-management.io/v1, the semantics of OCM's
// cert-policy-controller): it checks the TLS certificates held in the Secrets
// of the namespaces a policy selects against its minimum and maximum
// durations and SAN patterns, and writes the policy's status and compliance
// events. It is inform only, as upstream: it never changes a Secret.
//
// Resource: CertificatePolicy (namespaced). It owns the whole status:
// compliant, compliancyDetails (per selected namespace: the non-compliant
// certificates with their reasons and expiry, and upstream's message),
// lastEvaluated and history (newest first, at most 10); and a compliance
// Event per change of message (reason "policy: <ns>/<name>", message
// "<State>; <details>" in upstream's wording, on the owning Policy when there
// is one, else on the CertificatePolicy). No finalizer: it creates nothing.
//
// The decision is one pure function, Evaluate (evaluate.go): policy,
// namespaces, Secrets and a time in, status, compliance message and the next
// time the verdict can change with no change to any object (the earliest
// moment a compliant certificate comes within its minimum duration) out.
// Parse (cert.go) reads a Secret's certificate; a Secret whose certificate
// data cannot be read is reported non-compliant with the reason, never
// skipped silently and never a crash. Messages are in message.go.
//
// The runner (runner.go) is a controller-runtime controller keyed by policy:
// it watches CertificatePolicies, Secrets and Namespaces (a Secret change
// re-queues only the policies selecting its namespace) and never polls; a
// policy is looked at again at the time Evaluate names, so a certificate
// crossing its minimum duration turns the policy NonCompliant on time.
package certpolicy
