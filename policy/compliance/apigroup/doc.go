// Package apigroup is the compliance.flotilla.dev/v1alpha1 group of the hub's
// aggregated API (internal/aggregated): the compliance report and history read
// through the hub apiserver, as the user, with any kubeconfig.
//
//	GET /apis/compliance.flotilla.dev/v1alpha1/reports    the report document
//	    ?standard=&control=&clusters=&since=&baseline=     (as /api/compliance)
//	GET /apis/compliance.flotilla.dev/v1alpha1/histories  the history document
//	    ?since=&cluster=&policy=&control=                  (as `compliance history`)
//
// The hub apiserver authenticates the user; the aggregated server trusts the
// identity it forwards. Each request then asks, with SubjectAccessReviews,
// whether the user may list policies.policy.open-cluster-management.io in
// all namespaces, else in each namespace holding a root policy: the documents
// hold the policies of those namespaces only (a replica's data goes with its
// root), exactly as the live page (policy/compliance/web). A bad query
// parameter is a 400 that names it.
//
// The documents are built by policy/compliance/document, the code the CLI's
// offline path and the live page use. Client reads them for the CLI.
package apigroup
