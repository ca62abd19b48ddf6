// Package watchguard lets an agent notice that the watches its caches hang on
// may have missed something, and start again with caches listed afresh.
//
// Why: an agent's informers follow one apiserver through long-lived watches.
// When that apiserver restarts, or the connection to it dies without a word,
// the informers may keep objects that no longer match the apiserver (the hub
// saw exactly that after its apiserver and etcd restarted together, see
// hub/apiserverrestart.go), or wait on a watch that delivers nothing. The hub
// tells an apiserver restart by the identity leases in kube-system; an agent
// may not read those on the hub, so it reads the watches its informers
// already hold: a Tracker wraps the rest.Config the caches are built from and
// follows each watch's response stream (informers ask for bookmarks), taking
// two signs:
//
//   - cut: a watch broke mid-stream, ended before the time it asked for, or
//     could not reach the apiserver, after watches had been open. When the
//     apiserver answers again, the run ends (Lost, Reason "cut").
//   - silent: nothing arrived on a watch for Silence, not even a bookmark. A
//     live watch served from the apiserver's watch cache gets a bookmark about
//     every minute (k8s.io/apiserver's cacher), so three minutes of nothing is
//     a dead watch (Lost, Reason "silent").
//
// A watch that runs out its timeout, one the apiserver refuses with an answer
// (410 Gone, 429, 5xx) and one the client closes are not signs: the informer
// watches or lists again on its own. Earlier the guard opened a watch of its
// own beside the caches' (a probe); that was one more watch per agent and
// apiserver, which at 5,000 clusters was 5,000 more hub watches for each kind
// of agent.
//
// Run wraps an agent's body: it runs the body with the trackers beside it and,
// when one says Lost, stops the body and starts it again, so every cache is
// listed afresh. A run lasts at least 10 s, doubling while runs keep ending
// that soon (up to 5 minutes), so a connection that keeps breaking cannot keep
// the caches relisting. The decision is the pure function decide,
// table-tested; the trackers are tested on a real apiserver behind a proxy
// that cuts, freezes or refuses the connection.
package watchguard
