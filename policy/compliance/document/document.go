package document

import (
	"context"
	"errors"
	"strings"
	"time"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Document is a report with, when asked for and recorded, the history of its
// policies: the JSON of /api/compliance, of the hub's
// compliance.flotilla.dev reports and of `compliance report --since -o json`.
type Document struct {
	*compliance.Report
	History *history.Summary `json:"history,omitempty"`
}

// HistoryDocument is what `compliance history` shows: the window's changes,
// remediations, mean time to remediate and per-cluster counts, the control's
// counts over time (Trend) when one is asked for, and for a cluster alone when
// it last became NonCompliant in its whole recorded history.
type HistoryDocument struct {
	*history.Summary
	// Cluster is the cluster LastBecameNonCompliant answers for ("" when the
	// question was not asked: no cluster, or a policy too).
	Cluster string `json:"cluster,omitempty"`
	// LastBecameNonCompliant is nil when the cluster never did.
	LastBecameNonCompliant *time.Time `json:"lastBecameNonCompliant,omitempty"`
}

// ErrNoHistory is returned for a history when no store is given.
var ErrNoHistory = errors.New("no compliance history is recorded: the hub runs without --compliance-db")

// Source is what documents are built from.
type Source struct {
	// Input is the hub's policies (compliance.Read) with Now set. A history
	// without a control needs none.
	Input compliance.Input
	// History is the recorded history. Default nil: reports have no history,
	// histories fail with ErrNoHistory.
	History history.Store
	// Readable says whether the reader may see the policies of a namespace
	// (Readable). Default nil: every namespace.
	Readable func(namespace string) bool
}

// Build builds a report document: the report of the readable policies
// narrowed by o.Filter, the coverage of o.Baseline, and the history of the
// report's policies from o.Since. The history of a policy that no longer
// exists is left out, as are the replicas of policies the reader may not see.
func Build(ctx context.Context, src Source, o Options) (*Document, error) {
	in := Restrict(src.Input, src.Readable)
	r := compliance.Build(in, o.Filter)
	if o.Baseline != nil {
		r.Baseline = compliance.Cover(r, o.Baseline, o.Filter)
	}
	doc := &Document{Report: r}
	if src.History == nil || !o.History {
		return doc, nil
	}
	sum, err := history.SummarizeWithTrend(ctx, src.History, history.Query{Since: o.Since}, PoliciesOf(r), r, in, 0)
	if err != nil {
		return nil, err
	}
	doc.History = sum
	// The chain head, read after the history: it covers every event the
	// report saw (verify --head finds it as long as the store holds them).
	// It is the whole store's, and its number counts every transition of
	// the fleet: only a reader of every namespace gets it.
	if src.Readable != nil {
		return doc, nil
	}
	head, err := src.History.Head(ctx)
	if err != nil {
		return nil, err
	}
	r.HistoryHead = &compliance.ChainHead{Hash: head.Hash, Seq: head.Seq}
	return doc, nil
}

// BuildHistory builds a history document: the window from o.Since of the
// readable policies, narrowed by o's cluster, policy and control.
func BuildHistory(ctx context.Context, src Source, o HistoryOptions) (*HistoryDocument, error) {
	if src.History == nil {
		return nil, ErrNoHistory
	}
	keep := namespaceOf(src.Readable)
	var r *compliance.Report
	var in compliance.Input
	if o.Control != "" {
		in = Restrict(src.Input, src.Readable)
		r = compliance.Build(in, compliance.Filter{Control: o.Control})
		keep = PoliciesOf(r) // the report holds only readable policies
	}
	sum, err := history.Summarize(ctx, src.History, history.Query{Since: o.Since, Cluster: o.Cluster, Policy: o.Policy}, keep)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if sum.Trend, err = history.LoadTrend(ctx, src.History, r, in, o.Since, 0, keep); err != nil {
			return nil, err
		}
	}
	doc := &HistoryDocument{Summary: sum}
	if o.Cluster != "" && o.Policy == "" {
		doc.Cluster = o.Cluster
		events, err := src.History.Events(ctx, history.Query{Cluster: o.Cluster})
		if err != nil {
			return nil, err
		}
		found := false
		var at time.Time
		for _, t := range history.Transitions(kept(events, keep)) {
			if t.State == compliance.NonCompliant && (!found || t.Time.After(at)) {
				at, found = t.Time, true
			}
		}
		if found {
			doc.LastBecameNonCompliant = &at
		}
	}
	return doc, nil
}

// Readable returns which namespaces' policies a reader may see: nil (every
// one) when canList("") allows listing policies cluster-wide, else those of
// the namespaces holding a root policy that canList allows.
func Readable(ctx context.Context, in compliance.Input, canList func(ctx context.Context, namespace string) (bool, error)) (func(string) bool, error) {
	all, err := canList(ctx, "")
	if err != nil {
		return nil, err
	}
	if all {
		return nil, nil // every namespace (Source.Readable's nil)
	}
	ok := map[string]bool{}
	for _, p := range in.Roots {
		if _, seen := ok[p.Namespace]; seen {
			continue
		}
		if ok[p.Namespace], err = canList(ctx, p.Namespace); err != nil {
			return nil, err
		}
	}
	return func(ns string) bool { return ok[ns] }, nil
}

// Restrict keeps the roots of readable namespaces and their replicas (a
// replica's data goes with its root). A nil readable keeps everything.
func Restrict(in compliance.Input, readable func(string) bool) compliance.Input {
	if readable == nil {
		return in
	}
	out := compliance.Input{Now: in.Now}
	for _, p := range in.Roots {
		if readable(p.Namespace) {
			out.Roots = append(out.Roots, p)
		}
	}
	for _, p := range in.Replicas {
		ns, _, ok := strings.Cut(p.Labels[policyv1.RootPolicyLabel], ".")
		if ok && readable(ns) {
			out.Replicas = append(out.Replicas, p)
		}
	}
	return out
}

// PoliciesOf accepts the root policies ("namespace/name") the report holds.
func PoliciesOf(r *compliance.Report) func(string) bool {
	set := map[string]bool{}
	for _, s := range r.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				for _, p := range c.Policies {
					set[p] = true
				}
			}
		}
	}
	return func(p string) bool { return set[p] }
}

// namespaceOf turns a namespace check into a policy check (nil stays nil).
func namespaceOf(readable func(string) bool) func(string) bool {
	if readable == nil {
		return nil
	}
	return func(policy string) bool { ns, _, _ := strings.Cut(policy, "/"); return readable(ns) }
}

func kept(events []history.Event, keep func(string) bool) []history.Event {
	if keep == nil {
		return events
	}
	var out []history.Event
	for _, e := range events {
		if keep(e.Policy) {
			out = append(out, e)
		}
	}
	return out
}
