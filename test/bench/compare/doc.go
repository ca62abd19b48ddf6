// Package compare runs the same workload against Flotilla and against upstream
// Open Cluster Management's binaries, one after the other on the same control
// planes in one invocation, and prints a table of both figures and their ratio.
//
// The benchmark has the build tag `compare` (CI does not build it: it needs
// upstream binaries built from source). Run it with `make bench-compare`, which
// checks they are in .upstream/bin (built from upstream's public source
// beforehand, outside this tree), or by hand:
//
//	FLOTILLA_UPSTREAM_BIN=<folder with placement, work, registration, config-policy-controller> \
//	  go test -tags compare -run '^$' -bench . -benchtime 1x -timeout 90m ./test/bench/compare/
//
// FLOTILLA_COMPARE (comma-separated: placement, work, registration, policy;
// default all of these; placement10k, 10,000 placements, only when named) picks
// the workloads. FLOTILLA_COMPARE_QPS=N runs every client of both sides at N
// queries per second, burst 2N, instead of each side's defaults. See
// docs/benchmarks.md, "Side by side with upstream".
//
// FLOTILLA_COMPARE=search (only when named) compares fleet search with
// Clusterpedia on 10 clusters; it needs no OCM binaries but Clusterpedia's
// apiserver and clustersynchro-manager, built from its source, in
// FLOTILLA_CLUSTERPEDIA_BIN, and its CRD manifests (its deploy/ folder) in
// FLOTILLA_CLUSTERPEDIA_CRDS (default $FLOTILLA_CLUSTERPEDIA_BIN/../src/deploy).
// `make bench-compare-search` runs it. See docs/benchmarks.md, "Side by side
// with Clusterpedia".
package compare
