package main

import (
	"runtime/debug"
)

// hubGCPercent is the garbage collector's target for `flotilla hub` when the
// user set neither GOGC nor GOMEMLIMIT: the heap grows by half its live size
// between collections instead of Go's default of all of it. The hub's live
// heap is mostly its informer caches, which stay put, so the collector runs
// little more often while the peak RSS drops (docs/benchmarks.md, "The whole
// hub at fleet size").
const hubGCPercent = 50

// hubGC decides the hub's GC percent from its environment: the default above,
// unless GOGC or GOMEMLIMIT is set, in which case Go's own reading of them
// stands (ok is false).
func hubGC(getenv func(string) string) (percent int, ok bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	return hubGCPercent, true
}

// tuneHubGC applies hubGC to this process.
func tuneHubGC(getenv func(string) string) {
	if percent, ok := hubGC(getenv); ok {
		debug.SetGCPercent(percent)
	}
}
