// Package node runs one real Kubernetes node of a local environment on this
// machine: a containerd of its own (config, root, state and socket in the node's
// folder, never the system's), a kubelet that joins its cluster through TLS
// bootstrap (bootstrap token, CSR approved by kube-controller-manager), and a
// CNI bridge network on a private Pod range. Every host-level change goes
// through a host.Journal so that `flotilla dev down` undoes it.
//
// Addresses (see Plan): each environment owns 10.<o>.0.0/16, <o> derived from
// its data folder. The apiservers listen on 10.<o>.0.1 (on a bridge with no
// ports: the kubelet refuses a loopback node IP); node i has 10.<o>.0.<10+i> and
// Pods on 10.<o>.<1+i>.0/24. Pods reach their apiserver's Service IP
// (10.96.0.1:443) through one DNAT rule per node; nothing leaves the machine.
//
// Design: part of the dev environment (devenv/, docs/structure.md); it imports
// only internal/controlplane and devenv/host, and devenv and the node tests
// (test/e2e/nodes, test/chaos, test/bench/nodes) import it.
package node
