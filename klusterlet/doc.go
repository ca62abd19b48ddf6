// Package klusterlet runs the agent of one managed cluster: the registration
// agent (klusterlet/registration) and, once the cluster has a hub credential, the
// work agent (klusterlet/work).
package klusterlet
