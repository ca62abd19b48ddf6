// Package ocm holds the names Open Cluster Management fixes on the wire and
// that more than one side of Flotilla derives: identities in certificates
// (users and groups of cluster and addon agents), labels, finalizers and the
// names of RBAC objects and Secrets, and what an accepted cluster is
// (Accepted). The hub, the klusterlet and the addons import it; it imports
// nothing of Flotilla, so no side depends on another for a name.
package ocm
