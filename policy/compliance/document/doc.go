// Package document composes what the compliance CLI and the hub serve from
// one options value and one build path: a report Document (the report, the
// coverage of a baseline, the history of its policies) and a HistoryDocument
// (what `flotilla compliance history` shows).
//
// Options come from query parameters (ParseQuery, ParseHistoryQuery): the
// hub's live page (/api/compliance), its aggregated API
// (compliance.flotilla.dev) and the CLI, whose flags become the same
// parameters, all check them with the same code. Build and BuildHistory read
// a Source (the hub's policies, the history store, and which namespaces the
// reader may see, Readable) and are otherwise pure compositions of
// compliance.Build, compliance.Cover and the history package. Render and
// RenderHistory write a document in the CLI's formats; WriteHTML is the page.
package document
