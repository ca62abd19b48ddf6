package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
)

// Event is one recorded compliance state of a policy template on a cluster.
// Recording the same event twice keeps one row: an event is identified by all
// of its fields.
type Event struct {
	// Policy is the root policy, "namespace/name".
	Policy string `json:"policy"`
	// Template is the policy template's name ("" when unknown).
	Template string           `json:"template"`
	Cluster  string           `json:"cluster"`
	State    compliance.State `json:"state"`
	Message  string           `json:"message"`
	// Time is stored with microsecond precision, in UTC.
	Time time.Time `json:"time"`
}

// Key identifies the series an event belongs to.
type Key struct{ Policy, Template, Cluster string }

// Key returns the event's series.
func (e Event) Key() Key { return Key{e.Policy, e.Template, e.Cluster} }

// Query selects events. Zero fields select everything.
type Query struct {
	Policy, Template, Cluster string
	// Since keeps events at or after this time.
	Since time.Time
}

// Store records events and reads them back in time order.
type Store interface {
	// Record stores events, ignoring those already stored; it returns how many were new.
	Record(ctx context.Context, events ...Event) (int, error)
	// Events returns the events the query selects, oldest first (ties by policy,
	// template, cluster, state, message).
	Events(ctx context.Context, q Query) ([]Event, error)
	// Latest returns, for each pair, the newest event before the given time
	// of every template of that policy on that cluster, in no set order.
	Latest(ctx context.Context, before time.Time, pairs []PolicyCluster) ([]Event, error)
	// Window returns, read together, the events the query selects (which
	// must set Since) and the newest events before Since of the series of
	// every policy x cluster pair among them. It answers what Events and
	// Latest answer in a constant number of queries.
	Window(ctx context.Context, q Query) (Window, error)
	// Prune deletes the events older than before, except the newest event of
	// each series (so the state a series was in stays known); it returns how
	// many it deleted.
	Prune(ctx context.Context, before time.Time) (int, error)
	// Close releases the database.
	Close() error
}

// Window is a window of events and what came just before it.
type Window struct {
	// Events are the events from the query's Since on, oldest first (as Events).
	Events []Event
	// Before holds, for every policy x cluster pair among Events, the newest
	// event before Since of each template of that pair: one per series (of
	// events at the same time, the last in Events' order), in no set order.
	Before []Prior
	// Incremental is set when the window came from the store's window cache,
	// brought up to date with what was recorded since the previous read,
	// rather than read whole. The result is the same either way.
	Incremental bool
}

// Prior is the newest event of a series before a window.
type Prior struct {
	Event
	// NonCompliantSince is set when the event is NonCompliant: when its
	// series last became NonCompliant (its last transition to NonCompliant).
	NonCompliantSince time.Time
}

// PolicyCluster is a root policy ("namespace/name") on one cluster.
type PolicyCluster struct{ Policy, Cluster string }

// Validate reports what is wrong with an event, naming it.
func (e Event) Validate() error {
	var missing []string
	if e.Policy == "" {
		missing = append(missing, "policy")
	}
	if e.Cluster == "" {
		missing = append(missing, "cluster")
	}
	if e.State == "" {
		missing = append(missing, "state")
	}
	if e.Time.IsZero() {
		missing = append(missing, "time")
	}
	if len(missing) > 0 {
		return fmt.Errorf("compliance event %s/%s on %q: missing %s", e.Policy, e.Template, e.Cluster, strings.Join(missing, ", "))
	}
	return nil
}

// FromReplicas turns the history the replicas hold (status.details[].history)
// into events, so a restarted hub resumes from what the replicas say. The state
// is the message's prefix ("NonCompliant; violation - ...").
func FromReplicas(replicas []policyv1.Policy) []Event {
	var out []Event
	for _, r := range replicas {
		rootRef := r.Labels[policyv1.RootPolicyLabel]
		ns, name, ok := strings.Cut(rootRef, ".")
		if !ok {
			continue
		}
		cluster := r.Labels[policyv1.ClusterNameLabel]
		if cluster == "" {
			cluster = r.Namespace
		}
		for _, d := range r.Status.Details {
			if d == nil {
				continue
			}
			for _, h := range d.History {
				out = append(out, Event{
					Policy: ns + "/" + name, Template: d.TemplateMeta.Name, Cluster: cluster,
					State: stateOfMessage(h.Message), Message: h.Message, Time: h.LastTimestamp.Time,
				})
			}
		}
	}
	return out
}

func stateOfMessage(m string) compliance.State {
	prefix, _, _ := strings.Cut(m, ";")
	switch strings.TrimSpace(prefix) {
	case "Compliant":
		return compliance.Compliant
	case "NonCompliant":
		return compliance.NonCompliant
	case "Pending":
		return compliance.Pending
	}
	return compliance.Unknown
}

// Retained keeps the events at or after cutoff, plus the newest event of each
// series (so a series quiet for longer than the retention keeps its state).
func Retained(events []Event, cutoff time.Time) []Event {
	newest := map[Key]time.Time{}
	for _, e := range events {
		if t, ok := newest[e.Key()]; !ok || e.Time.After(t) {
			newest[e.Key()] = e.Time
		}
	}
	var out []Event
	for _, e := range events {
		if !e.Time.Before(cutoff) || e.Time.Equal(newest[e.Key()]) {
			out = append(out, e)
		}
	}
	return out
}

// ErrNoReplica is FromHubEvent's refusal of a well-formed event whose replica
// is not there: the events of a deleted policy outlive it.
var ErrNoReplica = errors.New("no replica")

// FromHubEvent turns a compliance event a managed cluster's framework agent
// forwarded to the hub into a history event, the same one its replica's
// history yields (so that both sources record one row). Identity comes from
// where the event is, never from what it says: the cluster is its replica's,
// the replica must be the Policy the event involves in the event's own
// namespace (a cluster namespace the agent is confined to), and the reason
// must name that namespace. replica is that Policy, nil when it does not
// exist.
func FromHubEvent(e *corev1.Event, replica *policyv1.Policy) (Event, error) {
	where := fmt.Sprintf("event %s/%s", e.Namespace, e.Name)
	ref := e.InvolvedObject
	if ref.Kind != "Policy" || ref.Namespace != e.Namespace || ref.Name == "" {
		return Event{}, fmt.Errorf("%s: involves %s %s/%s, not a Policy in its own namespace", where, ref.Kind, ref.Namespace, ref.Name)
	}
	template, ok := strings.CutPrefix(e.Reason, "policy: "+e.Namespace+"/")
	if !ok || template == "" {
		return Event{}, fmt.Errorf("%s: reason %q is not \"policy: %s/<template>\"", where, e.Reason, e.Namespace)
	}
	if replica == nil || replica.Namespace != e.Namespace || replica.Name != ref.Name {
		return Event{}, fmt.Errorf("%s: %w %s in namespace %s", where, ErrNoReplica, ref.Name, e.Namespace)
	}
	rootRef := replica.Labels[policyv1.RootPolicyLabel]
	ns, name, ok := strings.Cut(rootRef, ".")
	if !ok {
		return Event{}, fmt.Errorf("%s: policy %s/%s is not a replica (label %s is %q)", where, replica.Namespace, replica.Name, policyv1.RootPolicyLabel, rootRef)
	}
	cluster := replica.Labels[policyv1.ClusterNameLabel]
	if cluster == "" {
		cluster = replica.Namespace
	}
	at := e.LastTimestamp.Time
	if at.IsZero() {
		at = e.EventTime.Time
	}
	if at.IsZero() {
		at = e.FirstTimestamp.Time
	}
	out := Event{Policy: ns + "/" + name, Template: template, Cluster: cluster, State: stateOfMessage(e.Message), Message: e.Message, Time: at.UTC()}
	if err := out.Validate(); err != nil {
		return Event{}, fmt.Errorf("%s: %w", where, err)
	}
	return out, nil
}
