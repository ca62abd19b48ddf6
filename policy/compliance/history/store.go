package history

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	// Time is stored with microsecond precision, in UTC. The sources give
	// the time the cluster's engine recorded the transition, to the
	// microsecond where they carry it (EntryTime, FromHubEvent).
	Time time.Time `json:"time"`
	// Seq is the store's recording number of the event, set on the events
	// it reads back (0 on events to record). It is unique and grows with
	// every recorded event, so of two events of a series at the same time
	// the one with the lower Seq happened first: Record stores the events
	// of one call in time order, keeping the caller's order among equal
	// times (the sources give each series oldest first).
	Seq int64 `json:"seq,omitempty"`
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
	// Events returns the events the query selects, oldest first: by time,
	// policy, template and cluster, then by Seq (the order they happened in
	// within their series), then state and message (events recorded before
	// migration 5 have no Seq; see docs/compliance.md).
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
	// each series (so the state a series was in stays known) and any event
	// recorded after one it keeps (the series' hash chain loses only its
	// beginning); it returns how many it deleted.
	Prune(ctx context.Context, before time.Time) (int, error)
	// Head is the store's chain head: what every recorded event and prune
	// folded into one hash (chain.go), with the number of the last event.
	Head(ctx context.Context) (Head, error)
	// Verify checks every series' hash chain and the store's head, and
	// names the first broken link. It also looks for the given heads (from
	// earlier reports) among those the store's head passed through since
	// the last prune (Verification.Found).
	Verify(ctx context.Context, heads ...string) (Verification, error)
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

// EntryTime is when a replica's history entry happened, to the microsecond
// when the entry tells it: its lastTimestamp holds whole seconds (that is all
// the API keeps), and the Event it names does too, but Kubernetes' event
// recorders (and Flotilla's engines) name an Event
// "<object>.<hex of its creation time in Unix nanoseconds>", so a name whose
// suffix falls in the entry's second gives the sub-second part. Otherwise the
// whole second.
func EntryTime(h policyv1.ComplianceHistory) time.Time {
	return PreciseTime(h.LastTimestamp.Time, h.EventName, time.Time{})
}

// PreciseTime is the most precise time of a compliance Event whose whole
// second is at: its eventTime (a microsecond time) when that falls in the same
// second, else the time its name carries (see EntryTime) when that does,
// else at. A zero at takes eventTime's second.
func PreciseTime(at time.Time, name string, eventTime time.Time) time.Time {
	if at.IsZero() {
		at = eventTime
	}
	sec := at.Truncate(time.Second)
	if !eventTime.IsZero() && eventTime.Truncate(time.Second).Equal(sec) {
		return eventTime.UTC()
	}
	if t, ok := NameTime(name); ok && t.Truncate(time.Second).Equal(sec) {
		return t.UTC()
	}
	return at.UTC()
}

// NameTime is the creation time an Event's name carries when it is named as
// Kubernetes' event recorders name them: "<object>.<hex Unix nanoseconds>".
func NameTime(name string) (time.Time, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || len(name)-i-1 < 8 || len(name)-i-1 > 16 {
		return time.Time{}, false
	}
	n, err := strconv.ParseUint(name[i+1:], 16, 63)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(n)).UTC(), true
}

// FromReplicas turns the history the replicas hold (status.details[].history)
// into events, so a restarted hub resumes from what the replicas say. The state
// is the message's prefix ("NonCompliant; violation - ..."). A template's
// history is newest first; its events are given oldest first, at EntryTime,
// so that Record keeps the order of entries within one second.
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
			for i := len(d.History) - 1; i >= 0; i-- {
				h := d.History[i]
				out = append(out, Event{
					Policy: ns + "/" + name, Template: d.TemplateMeta.Name, Cluster: cluster,
					State: stateOfMessage(h.Message), Message: h.Message, Time: EntryTime(h),
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
		at = e.FirstTimestamp.Time
	}
	// The agent puts the source event's microsecond time in eventTime
	// (agent.HubEvents, package policy/agent); the hub Event's own name is a digest.
	at = PreciseTime(at, "", e.EventTime.Time)
	out := Event{Policy: ns + "/" + name, Template: template, Cluster: cluster, State: stateOfMessage(e.Message), Message: e.Message, Time: at}
	if err := out.Validate(); err != nil {
		return Event{}, fmt.Errorf("%s: %w", where, err)
	}
	return out, nil
}
