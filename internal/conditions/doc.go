// Package conditions keeps the status messages Flotilla writes within what
// their CRDs accept, so a long error can never make a status write fail.
//
// metav1.Condition limits `message` to 32768 bytes, and the apiserver refuses
// the whole status update when one condition is longer: the object then shows
// no status at all, forever (an apiserver error that echoes a 100,000-byte
// ConfigMap, a Placement quoting a 100,000-byte CEL expression). Every
// controller therefore runs its status through Fit (or FitStatus and Report)
// just before writing it:
//
//   - every string field named Message, at any depth of the status
//     (conditions of the object, per-manifest conditions of a ManifestWork,
//     ConfigurationPolicy details and history, ...), is cut on a UTF-8
//     boundary to at most MaxMessage bytes, and ends with a marker saying how
//     much was cut and where the full text is;
//   - all the messages of one status share a budget (TotalBudget): with
//     hundreds of conditions each is cut to TotalBudget/n bytes (but never
//     below MinMessage), so the object stays under etcd's size limit;
//   - each cut is logged with the full text, and reported in a Warning Event
//     (reason ReasonMessageTruncated) on the object, once per distinct text.
//
// Other CRD limits on what controllers write are enforced where the value is
// made (JsonRaw status feedback is refused over 1024 bytes by the work agent,
// cluster claim values are bounded by the ClusterClaim CRD).
package conditions
