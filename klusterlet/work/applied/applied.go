// Package applied holds the pure bookkeeping of AppliedManifestWork, the
// cluster-scoped record on the managed cluster of what a ManifestWork applied:
// its name, which recorded resources became stale when manifests left the work,
// and which resources must be kept (orphaned) instead of deleted.
package applied

import (
	"crypto/sha256"
	"fmt"

	workv1 "open-cluster-management.io/api/work/v1"
)

// HubHash identifies a hub by its apiserver URL: the hex SHA-256 of the URL, as
// in OCM, so AppliedManifestWorks from different hubs never collide.
func HubHash(hubURL string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(hubURL)))
}

// Name is the AppliedManifestWork name of a ManifestWork: `<hubHash>-<workName>`.
func Name(hubHash, workName string) string { return hubHash + "-" + workName }

// WorkName is the ManifestWork name an AppliedManifestWork name stands for, and
// whether the name belongs to hubHash at all.
func WorkName(hubHash, appliedName string) (string, bool) {
	prefix := hubHash + "-"
	if len(appliedName) <= len(prefix) || appliedName[:len(prefix)] != prefix {
		return "", false
	}
	return appliedName[len(prefix):], true
}

// ClusterLabel is set on every AppliedManifestWork the agent creates (or takes
// over): the name of the managed cluster the record is for. Several agents of
// one hub sharing a managed apiserver (simulated clusters) tell their records
// apart by it.
const ClusterLabel = "work.flotilla.dev/cluster"

// OfThisHub reports whether an AppliedManifestWork of hub hubHash is the
// business of the agent agentID of cluster clusterName: its own, or written
// under another agent ID for the same cluster (the agent was renamed) or by an
// agent that did not label its cluster (an older agent). A record labelled for
// another cluster belongs to that cluster's agent.
func OfThisHub(amw *workv1.AppliedManifestWork, hubHash, agentID, clusterName string) bool {
	if amw.Spec.HubHash != hubHash {
		return false
	}
	if amw.Spec.AgentID == agentID {
		return true
	}
	c, labelled := amw.Labels[ClusterLabel]
	return !labelled || c == clusterName
}

// Key identifies a resource regardless of version and UID.
type Key struct{ Group, Resource, Namespace, Name string }

// KeyOf returns the Key of an applied resource.
func KeyOf(r workv1.AppliedManifestResourceMeta) Key {
	return Key{r.Group, r.Resource, r.Namespace, r.Name}
}

// Stale returns the resources recorded in prev that are no longer in cur: the
// manifests removed from the work. A resource recorded again in cur (even with a
// new UID, after it was deleted and re-created) is not stale.
func Stale(prev, cur []workv1.AppliedManifestResourceMeta) []workv1.AppliedManifestResourceMeta {
	keep := make(map[Key]bool, len(cur))
	for _, r := range cur {
		keep[KeyOf(r)] = true
	}
	var out []workv1.AppliedManifestResourceMeta
	for _, r := range prev {
		if !keep[KeyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}

// Merge returns cur followed by the entries of extra whose keys are not in cur,
// so a record never loses a resource the agent still has to clean up.
func Merge(cur, extra []workv1.AppliedManifestResourceMeta) []workv1.AppliedManifestResourceMeta {
	out := append([]workv1.AppliedManifestResourceMeta(nil), cur...)
	seen := make(map[Key]bool, len(cur))
	for _, r := range cur {
		seen[KeyOf(r)] = true
	}
	for _, r := range extra {
		if !seen[KeyOf(r)] {
			seen[KeyOf(r)] = true
			out = append(out, r)
		}
	}
	return out
}

// OwnedElsewhere reports whether another AppliedManifestWork (not self) records
// the same resource with the same UID: then that work still owns it and it must
// not be deleted.
func OwnedElsewhere(r workv1.AppliedManifestResourceMeta, self string, all []workv1.AppliedManifestWork) bool {
	for i := range all {
		if all[i].Name == self {
			continue
		}
		for _, o := range all[i].Status.AppliedResources {
			if KeyOf(o) == KeyOf(r) && (o.UID == r.UID || o.UID == "" || r.UID == "") {
				return true
			}
		}
	}
	return false
}

// Orphaned reports whether the delete option keeps r on the managed cluster
// when the work is deleted or r is removed from it: everything under Orphan,
// the resources matching an orphaning rule under SelectivelyOrphan, nothing
// under Foreground (the default).
func Orphaned(r workv1.AppliedManifestResourceMeta, opt *workv1.DeleteOption) bool {
	if opt == nil {
		return false
	}
	switch opt.PropagationPolicy {
	case workv1.DeletePropagationPolicyTypeOrphan:
		return true
	case workv1.DeletePropagationPolicyTypeSelectivelyOrphan:
		if opt.SelectivelyOrphan == nil {
			return false
		}
		for _, rule := range opt.SelectivelyOrphan.OrphaningRules {
			if rule.Group == r.Group && rule.Resource == r.Resource && rule.Namespace == r.Namespace && rule.Name == r.Name {
				return true
			}
		}
	}
	return false
}
