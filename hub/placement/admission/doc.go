// Package admission is the Placement validating webhook: a Placement whose
// spec would make it misconfigured (scheduling.Registry.Validate: bad label or
// claim selectors, CEL that does not compile, unknown prioritizers, duplicate
// decision-group names, ...) is refused at create, and at an update that
// changes its spec, with 422 Invalid and a message naming every field at
// fault. Bounds the CRD lacks that need no Go (numberOfClusters' range,
// toleration operators) are the ValidatingAdmissionPolicy
// flotilla-placements' (manifests/admission/hub/placements.yaml), which holds
// even while no hub runs. It owns no resource, condition or finalizer.
package admission
