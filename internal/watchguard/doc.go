// Package watchguard lets an agent notice that the watches its caches hang on
// may have missed something, and start again with caches listed afresh.
//
// Why: an agent's informers follow one apiserver through long-lived watches.
// When that apiserver restarts, or the connection to it dies without a word,
// the informers may keep objects that no longer match the apiserver (the hub
// saw exactly that after its apiserver and etcd restarted together, see
// hub/apiserverrestart.go), or wait on a watch that delivers nothing. The hub
// tells an apiserver restart by the identity leases in kube-system; an agent
// may not read those on the hub, so it watches a resource it already reads,
// with bookmarks, and takes two signs:
//
//   - cut: the probe's watch ended before the time it asked for, with an
//     error, or could not be opened, after it had been running. When the
//     apiserver answers again, the run ends (Lost, Reason "cut").
//   - silent: nothing arrived for Silence, not even a bookmark. A live watch
//     served from the apiserver's watch cache gets a bookmark about every
//     minute (k8s.io/apiserver's cacher), so three minutes of nothing is a
//     dead watch (Lost, Reason "silent").
//
// A watch that runs out its timeout ends normally and is opened again from
// its last resourceVersion; a probe whose resourceVersion expired (410 Gone)
// lists again. Neither ends the run.
//
// Run wraps an agent's body: it runs the body with the probes beside it and,
// when a probe says Lost, stops the body and starts it again, so every cache
// is listed afresh. A run lasts at least 10 s, doubling while runs keep ending
// that soon (up to 5 minutes), so a connection that keeps breaking cannot keep
// the caches relisting. The decision is the pure function next, table-tested; the
// probes are tested on a real apiserver behind a proxy that cuts or freezes
// the connection.
package watchguard
