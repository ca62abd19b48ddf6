// Package v1alpha1 holds the wire types of Flotilla's fleet search API,
// search.flotilla.dev/v1alpha1, served by the hub's aggregated API server
// (search/apigroup). They are not stored as objects: a search agent posts a
// Sync to /apis/search.flotilla.dev/v1alpha1/namespaces/<cluster>/syncs and
// reads the SyncResult in the answer. Searches answer with Kubernetes' own
// List and Table types (see docs/search.md).
package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The group and version.
const (
	GroupName = "search.flotilla.dev"
	Version   = "v1alpha1"
)

// A Mode says what a ResourceSync holds.
type Mode string

const (
	// ModeCheck carries the agent's Digest of a resource's whole set and
	// no objects: the hub answers InSync, or the (uid, resourceVersion)
	// pairs it holds so that the agent sends only the difference.
	ModeCheck Mode = "Check"
	// ModeDelta carries objects to add or replace (Upserts) and UIDs to
	// remove (Deletes).
	ModeDelta Mode = "Delta"
	// ModeReplace carries the resource's whole set: the index drops what it
	// holds for the resource beyond Upserts.
	ModeReplace Mode = "Replace"
)

// Sync is what a search agent posts for its cluster.
type Sync struct {
	metav1.TypeMeta `json:",inline"`
	// Resources are the resources synced, each at most once.
	Resources []ResourceSync `json:"resources"`
}

// ResourceSync is one resource's part of a Sync.
type ResourceSync struct {
	// Group, Version and Resource name the resource (Group "" is core).
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// Kind of its objects.
	Kind string `json:"kind"`
	// Namespaced is true when its objects live in namespaces.
	Namespaced bool `json:"namespaced,omitempty"`
	// Mode says what the entry holds.
	Mode Mode `json:"mode"`
	// Digest (Check) is the agent's digest of the set: search/object.Digest.
	Digest string `json:"digest,omitempty"`
	// Upserts (Delta, Replace) are whole objects, as the agent sends them
	// (search/object.Sanitize: no managedFields, no Secret data).
	Upserts []json.RawMessage `json:"upserts,omitempty"`
	// Deletes (Delta) are the UIDs of objects gone.
	Deletes []string `json:"deletes,omitempty"`
}

// SyncResult is the answer to a Sync: one entry per ResourceSync, in order.
type SyncResult struct {
	metav1.TypeMeta `json:",inline"`
	// Epoch names the hub's index. When it changes (the index was replaced,
	// or another hub replica with its own answered), the agent compares its
	// digests again.
	Epoch     string           `json:"epoch"`
	Resources []ResourceResult `json:"resources"`
}

// ResourceResult is the answer for one ResourceSync.
type ResourceResult struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// InSync (Check) is true when the hub's digest equals the agent's.
	InSync bool `json:"inSync,omitempty"`
	// Have (Check, not in sync) maps each UID the hub holds to its
	// resourceVersion.
	Have map[string]string `json:"have,omitempty"`
	// Stored (Delta, Replace) is how many objects the index holds for the
	// resource afterwards.
	Stored int `json:"stored"`
}
