// Package devenv is Flotilla's local default: a hub and N managed clusters as
// real control planes on this machine, kept in one data folder, started in the
// background by `flotilla dev up`, reported by `flotilla dev status` and stopped
// by `flotilla dev down`. Stopping keeps the data, so `up` resumes where `down`
// left off.
//
// Data folder layout (default .flotilla):
//
//	env.json                     what the environment is (cluster names)
//	hub.kubeconfig               admin kubeconfig of the hub
//	clusters/<name>.kubeconfig   admin kubeconfig of each managed cluster
//	controlplanes/<name>/        each control plane's PKI, etcd data, logs, state
//	processes.json, logs/        Flotilla's own processes (hub, klusterlets)
//
// Design: the dev environment is an application, not a utility, so it has a
// room of its own at the top level (docs/structure.md): it imports the hub, the
// klusterlet and the addons to run them, and only cmd/flotilla and the tests
// import it. Its parts live under it: devenv/node (real nodes) and devenv/host
// (the journal of host changes). The control planes themselves come from
// internal/controlplane, which the test harness (test/testenv) shares.
package devenv
