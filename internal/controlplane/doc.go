// Package controlplane runs a real Kubernetes control plane on this machine: etcd,
// kube-apiserver and kube-controller-manager, built from source by
// `make controlplane`. Flotilla's tests (test/testenv) and its local default
// (`flotilla dev up`) both stand on it.
//
// A control plane lives in one directory: its PKI, etcd data, logs, admin
// kubeconfig and a state file with ports and process IDs. Starting it again on the
// same directory reuses all of that, so state survives a restart.
//
// controller-runtime's envtest was the first candidate, but it neither runs
// kube-controller-manager (needed to sign client CSRs, finish namespace deletion
// and cascade owner references) nor keeps its CA key, nor runs processes that
// outlive the caller, which `flotilla dev up` needs. This package does those three
// things and little else.
//
// Design: it stays on the ground floor (internal/, docs/structure.md) rather
// than moving under devenv/ with the environment: it imports only internal/pki,
// and two applications use it, the dev environment (devenv, devenv/node) and
// the test harness (test/testenv, which the tests of every room import). Under
// devenv/ every test would depend on the dev environment's room for an
// apiserver.
package controlplane
