// Package registration measures cluster registration: the time from `accept` to
// ManagedClusterJoined for 1 and for 50 clusters accepted at once, and the hub's
// memory with 50 joined clusters. The hub runs as its own `flotilla hub` process
// (so its memory can be read); the simulated clusters are in-process registration
// agents sharing one managed apiserver, each with its own agent namespace.
package registration
