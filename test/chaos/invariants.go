package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is one object the run manages, as a hub work's spec wants it
// (Expected) or as a managed cluster holds it (Observed). Key fields identify
// it; Data is what it carries.
type Object struct {
	Cluster   string
	Namespace string
	Name      string
	Data      map[string]string
	// Work is the ManifestWork that wants it (Expected only).
	Work string
	// HeldSince (Observed only) is set when the agent holds the object for a
	// work that is gone from the hub until its eviction grace ends: the
	// status.evictionStartTime of the AppliedManifestWork that owns it.
	HeldSince time.Time
}

func (o Object) key() string { return o.Cluster + "/" + o.Namespace + "/" + o.Name }

// ViolationKind names what broke.
type ViolationKind string

// The invariants a run checks.
const (
	// Missing: a work wants the object and its cluster does not have it.
	Missing ViolationKind = "missing"
	// Drift: the cluster holds the object with other data than the work's last spec.
	Drift ViolationKind = "drift"
	// Leftover: the cluster holds a run object that no work wants (a deleted
	// work left it behind).
	Leftover ViolationKind = "leftover"
	// WrongCluster: an object meant for one cluster was applied on another.
	WrongCluster ViolationKind = "wrong-cluster"
	// Stale: a work is not Applied at its latest generation.
	Stale ViolationKind = "stale"
	// Panic: a process logged a panic or a fatal error.
	Panic ViolationKind = "panic"
	// MemoryBound: a process grew past the run's memory bound.
	MemoryBound ViolationKind = "memory"
	// NoConvergence: the fleet did not converge within the bound after a fault.
	NoConvergence ViolationKind = "no-convergence"
	// Partition: a cluster cut off from the hub was not marked Unknown and
	// tainted, or stopped running what it ran.
	Partition ViolationKind = "partition"
	// Search: the hub's search index differs from what a cluster holds.
	Search ViolationKind = "search"
)

// Violation is one broken invariant, said for a person.
type Violation struct {
	Kind    ViolationKind
	Message string
}

func (v Violation) String() string { return string(v.Kind) + ": " + v.Message }

// ClusterKey is the data key every per-cluster object carries: the cluster
// the run meant it for. Objects of a ManifestWorkReplicaSet (the same on every
// cluster) do not carry it.
const ClusterKey = "cluster"

// Check compares what the works want with what the clusters hold. Both lists
// hold only the run's objects (the run labels them).
func Check(expected, observed []Object) []Violation {
	var out []Violation
	want := map[string]Object{}
	for _, e := range expected {
		want[e.key()] = e
	}
	have := map[string]Object{}
	for _, o := range observed {
		have[o.key()] = o
		if c, ok := o.Data[ClusterKey]; ok && c != o.Cluster {
			out = append(out, Violation{WrongCluster, fmt.Sprintf("ConfigMap %s/%s on %s is meant for %s", o.Namespace, o.Name, o.Cluster, c)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		e := want[k]
		o, ok := have[k]
		switch {
		case !ok:
			out = append(out, Violation{Missing, fmt.Sprintf("work %s/%s wants ConfigMap %s/%s; %s does not have it", e.Cluster, e.Work, e.Namespace, e.Name, e.Cluster)})
		case !maps.Equal(e.Data, o.Data):
			out = append(out, Violation{Drift, fmt.Sprintf("ConfigMap %s/%s on %s holds %s; work %s wants %s", e.Namespace, e.Name, e.Cluster, render(o.Data), e.Work, render(e.Data))})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok {
			o := have[k]
			out = append(out, Violation{Leftover, fmt.Sprintf("ConfigMap %s/%s on %s is wanted by no work", o.Namespace, o.Name, o.Cluster)})
		}
	}
	return out
}

// Held takes out of observed the objects no work wants that the agent holds
// only until an eviction grace ends (HeldSince set). Each is a Leftover (a
// deleted work left it behind, for the agent's grace of an hour by default),
// returned by key so that the run reports it once, at the end; it does not
// hold back the convergence measured after later faults, since the grace
// outlasts a run.
func Held(expected, observed []Object) (rest []Object, held map[string]Violation) {
	wanted := map[string]bool{}
	for _, e := range expected {
		wanted[e.key()] = true
	}
	held = map[string]Violation{}
	for _, o := range observed {
		if o.HeldSince.IsZero() || wanted[o.key()] {
			rest = append(rest, o)
			continue
		}
		held[o.key()] = Violation{Leftover, fmt.Sprintf("ConfigMap %s/%s on %s is wanted by no work: its work is gone from the hub and the agent holds what it applied until the eviction grace ends (eviction started %s)",
			o.Namespace, o.Name, o.Cluster, o.HeldSince.UTC().Format(time.TimeOnly))}
	}
	return rest, held
}

func render(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Enabled says whether a create of an object the run wants to exist (an
// addon's ManagedClusterAddOn) has made it exist: created, or found there
// already (a create retried after one that landed) and not on its way out.
// An object being deleted (a finalizer holds it while the hub cleans up after
// a disable) refuses the create as AlreadyExists and is then gone: not
// enabled, the workload enables it again later. existing is the object read
// after an AlreadyExists (nil if it could not be read).
func Enabled(createErr error, existing metav1.Object) bool {
	switch {
	case createErr == nil:
		return true
	case !apierrors.IsAlreadyExists(createErr):
		return false
	default:
		return existing != nil && existing.GetDeletionTimestamp() == nil
	}
}

// LeasePeriod says whether a cluster's agent renews its lease at the period
// its ManagedCluster asks for (want seconds; got is the lease's
// spec.leaseDurationSeconds, which the agent writes at every renewal). The hub
// marks a cluster Unknown after five periods without a renewal: an agent still
// on a longer period (its default 60 s, after a restart or a change of the
// period) is marked Unknown and tainted while it runs, so the fleet has not
// converged until it renews at the period asked for.
func LeasePeriod(cluster string, want int32, got *int32) []Violation {
	if got != nil && *got == want {
		return nil
	}
	had := "no period"
	if got != nil {
		had = fmt.Sprintf("%d s", *got)
	}
	return []Violation{{Stale, fmt.Sprintf("%s renews its lease with %s, its ManagedCluster asks for %d s", cluster, had, want)}}
}

// PanicLines returns the lines of a log that show a crash: a Go panic, a fatal
// runtime error or a data race.
func PanicLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		l := strings.TrimSpace(criMessage(line))
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") ||
			strings.Contains(l, "WARNING: DATA RACE") || strings.Contains(l, "Observed a panic") {
			out = append(out, l)
		}
	}
	return out
}

// criMessage is the message of a container log line in the CRI format
// ("<RFC 3339 time> stdout|stderr P|F <message>", as the nodes' kubelets
// write Pod logs); any other line is returned as it is.
func criMessage(line string) string {
	f := strings.SplitN(line, " ", 4)
	if len(f) == 4 && (f[1] == "stdout" || f[1] == "stderr") && (f[2] == "F" || f[2] == "P") {
		if _, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
			return f[3]
		}
	}
	return line
}

// SearchCheck compares what the clusters hold with what the hub's search
// index finds for the same objects: every held object is found, with the
// same data, and nothing else is.
func SearchCheck(observed, indexed []Object) []Violation {
	var out []Violation
	have := map[string]Object{}
	for _, o := range observed {
		have[o.key()] = o
	}
	found := map[string]Object{}
	for _, o := range indexed {
		found[o.key()] = o
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		f, ok := found[k]
		switch {
		case !ok:
			out = append(out, Violation{Search, k + " is on its cluster and not in the search index"})
		case !maps.Equal(f.Data, have[k].Data):
			out = append(out, Violation{Search, fmt.Sprintf("%s: the index has data %v, the cluster %v", k, f.Data, have[k].Data)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(found)) {
		if _, ok := have[k]; !ok {
			out = append(out, Violation{Search, k + " is in the search index and not on its cluster"})
		}
	}
	return out
}
