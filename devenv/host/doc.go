// Package host makes every change to the host that an environment with nodes
// needs (network devices and addresses, iptables rules, sysctls, cgroups,
// directories outside the data folder), records each in a journal file before
// making it, and undoes them all in reverse order. `flotilla dev down` is the
// mirror of `dev up`: Undo leaves the host as it found it.
//
// Changes others make on the environment's behalf (the CNI bridge plugin
// creating a bridge and turning on IP forwarding, the kubelet setting kernel
// tunables, containerd mounting root filesystems) are recorded too, as what to
// remove or restore, so that Undo covers them.
//
// Every change is idempotent: Ensure* on a change already made (and recorded)
// does nothing, so `dev up` can run on a half-started environment. A device or
// rule that exists but is not in the journal is never adopted: it belongs to
// someone else.
//
// Design: part of the dev environment (devenv/, docs/structure.md); it imports
// nothing of Flotilla, devenv and devenv/node record their changes through it.
package host
