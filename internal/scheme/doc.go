// Package scheme builds the runtime.Scheme every Flotilla manager and client
// uses: the Kubernetes built-in types plus every Open Cluster Management API
// group the hub serves (cluster, work, addon) and Flotilla's policy types.
//
// Design: it is ground floor (internal/) because both sides of the wire need
// it: the hub, the klusterlet, the governance addon and the tests. It imports
// only api/ and the upstream API modules, so none of them depends on another
// room to decode an object (docs/structure.md).
package scheme
