// Package workreplicaset benchmarks what a DistributionPolicy adds to the
// ManifestWorkReplicaSet controller: the same replica set rendered for 1,000
// clusters with no policy and with a policy of 10 overrides (and a weighted
// replica division), on a real hub apiserver (the controller's whole round:
// reads, 1,000 work writes, status) and in memory (the render alone).
// Results and how to reproduce them: docs/benchmarks.md.
package workreplicaset
