package ocm

// WorkConditionConflict is the condition (per manifest and per work) that
// says a manifest's object is also in another ManifestWork with different
// content. It is Flotilla's own (OCM lets such works overwrite each other):
// the work agent writes it, and the CLI shows it.
const WorkConditionConflict = "Conflict"
