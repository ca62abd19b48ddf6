// Package status turns what the work agent observed while applying a
// ManifestWork into the ManifestWork's status: per-manifest conditions
// (Applied, Available, StatusFeedbackSynced), status feedback values
// (WellKnownStatus and JSONPaths rules) and the work-level Applied and
// Available conditions, with OCM's reasons. Everything here is pure: it takes
// facts and returns status, and never talks to an apiserver.
package status
