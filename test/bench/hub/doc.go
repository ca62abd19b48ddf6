// Package hub benchmarks the whole `flotilla hub` process at fleet size: its
// memory and CPU while it holds 1,000 accepted clusters and 1,000 Placements.
package hub
