// Package placement benchmarks the placement controller on a real hub: N
// placements over M clusters, measured as the time until every placement has its
// decisions, and the memory of the hub side (the controllers' Go heap and the
// kube-apiserver and etcd resident sets). Run with `make bench` or
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./test/bench/placement/
//
// Set FLOTILLA_BENCH_PLACEMENTS=1000 to run only the smaller size.
package placement
