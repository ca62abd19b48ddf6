// Package web serves the compliance report live from the hub: the HTML page at
// /compliance and the JSON at /api/compliance, on the hub's HTTPS port.
//
// Every request is authenticated and authorised through the hub apiserver: the
// bearer token is checked with a TokenReview (no or a bad token: 401), then a
// SubjectAccessReview asks whether the user may list
// policies.policy.open-cluster-management.io in all namespaces, else in each
// namespace holding a root policy. The report holds only the root policies of
// the namespaces the user may list, and the history of those policies; a
// replica's messages (in a cluster namespace) are shown with its root.
// Decisions are cached for ten seconds.
//
// With a history store, the page adds trend lines (inline SVG drawn on the
// server) and what changed in the window (?since=30d by default), and the JSON
// a "history" field. Query parameters: standard, control, clusters
// (comma-separated), since, baseline. The documents are built by
// policy/compliance/document, as the hub's aggregated API
// (policy/compliance/apigroup) and the CLI build them.
package web
