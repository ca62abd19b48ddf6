// Package tolerant keeps one undecodable object from stopping every informer of
// its kind.
//
// # The failure it prevents
//
// A CRD schema says `type: integer` where the Go type says int32 (Placement
// spec.numberOfClusters, ManagedCluster spec.leaseDurationSeconds, ...), so the
// apiserver can store a value no typed client can decode. client-go decodes a
// LIST response as one value: one such item fails the whole list, the
// reflector retries with backoff forever, and no object of that kind in any
// namespace is seen again. A watch event with such an object ends the watch,
// which forces the same failing list.
//
// # The mechanism
//
// Filter is an http.RoundTripper wrapper installed with rest.Config.Wrap (see
// Filter.Wrap). For GET responses in JSON from the API groups it checks (by
// default every group of the given scheme that is not a Kubernetes built-in
// group), it decodes every list item and every watch event's object on its own
// into its Go type, through the scheme, exactly as the client will:
//
//   - a list item that fails is removed from the list;
//   - a watch event whose object fails becomes a DELETED event carrying only
//     the object's identity (apiVersion, kind, name, namespace, uid,
//     resourceVersion), so a cache that held a good earlier version drops it,
//     and an ADDED event of such an object is dropped;
//   - BOOKMARK and ERROR events, single-object GETs, writes and every other
//     response pass unchanged (a GET of the bad object by name still fails,
//     with the decode error, for that object only).
//
// The object is then invisible to this process, as if it did not exist, until
// it is fixed or deleted. Each skipped object version (kind, namespace, name,
// resourceVersion) is logged once with the decode error, counted in the
// metric flotilla_undecodable_objects_total, and handed to the optional
// Reporter (the hub records a Warning Event on the object), however often
// informers relist.
//
// Invisible is not the same as deleted for code that acts on absence: a
// controller that destroys things when an object is gone must confirm the
// absence with an uncached read (which fails with the decode error instead of
// NotFound); the work agent's eviction of orphaned AppliedManifestWorks does
// (metadata only). The other side of invisible: a controller cannot finalize
// what it cannot see, so deleting an undecodable object that carries a
// finalizer waits until the object is fixed (or the finalizer removed by hand).
//
// # Alternatives considered
//
//   - controller-runtime cache options: DefaultTransform and per-object
//     transforms run after decoding, too late; Options.NewInformer receives a
//     ListerWatcher that already decodes whole lists. Neither helps.
//   - A metadata-only list to find the offender, then exclude it with a field
//     selector (metadata.name!=x): works for one namespace and one offender,
//     but not for cluster-wide informers with several offenders, needs a
//     second list per failure, and only covers informers built to do it.
//   - Unstructured informers everywhere: lose the typed API of every
//     controller.
//   - Admission bounds (ValidatingAdmissionPolicy, CRD schema bounds) keep
//     new bad objects out, but not objects stored before they existed or
//     written while they were removed. The filter is the second line.
//
// The wrapper works for every client built from the wrapped rest.Config:
// controller-runtime managers and caches, generated clientsets and their
// informer factories. Its cost is a second JSON decode of each list item and
// watch event of the checked groups only (BenchmarkList: listing 1000
// Placements takes about 2.5 times the CPU of the unfiltered list; lists are
// rare, at start and after a watch expires); built-in groups (served as
// protobuf or JSON, and validated by the apiserver against their Go types) are
// not inspected.
// Unstructured (dynamic) clients never fail to decode and need no filter.
package tolerant
