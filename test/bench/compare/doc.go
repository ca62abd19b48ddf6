// Package compare runs the same workload against Flotilla and against upstream
// Open Cluster Management's binaries, one after the other on the same control
// planes in one invocation, and prints a table of both figures and their ratio.
//
// The benchmark has the build tag `compare` (CI does not build it: it needs
// upstream binaries built from source). Run it with `make bench-compare`, which
// builds them with hack/upstream-build.sh, or by hand:
//
//	FLOTILLA_UPSTREAM_BIN=<folder with placement, work, registration> \
//	  go test -tags compare -run '^$' -bench . -benchtime 1x -timeout 60m ./test/bench/compare/
//
// FLOTILLA_COMPARE (comma-separated: placement, work, registration; default
// all) picks the workloads; see
// docs/benchmarks.md, "Side by side with upstream".
package compare
