// Package work benchmarks work distribution: the latency from creating a
// ManifestWork on the hub to its resource existing on the managed cluster and
// to Applied=True on the hub, and the agents' memory, for 1,000 works over 10
// clusters, in a burst or at a steady rate (FLOTILLA_BENCH_RATE), with a
// per-work trace of the agent's stages (klusterlet/work.Options.Tracer).
// Results and how to reproduce them: docs/benchmarks.md.
package work
