package compliance

import (
	"strings"
	"time"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// SchemaVersion names the JSON and CSV schema; it changes only when a field is
// removed or its meaning changes (new fields may be added).
const SchemaVersion = "compliance.flotilla.dev/v1"

// State is the compliance of a control on a cluster.
type State string

// States, in OCM's precedence order: NonCompliant wins over Pending, Pending
// over Unknown, Unknown over Compliant.
const (
	NonCompliant State = "NonCompliant"
	Pending      State = "Pending"
	Unknown      State = "Unknown"
	Compliant    State = "Compliant"
)

func (s State) rank() int {
	switch s {
	case NonCompliant:
		return 3
	case Pending:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

// worse returns the state that wins under OCM's precedence.
func worse(a, b State) State {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// stateOf maps a policy's per-cluster compliance to a report state.
func stateOf(s policyv1.ComplianceState) State {
	switch s {
	case policyv1.Compliant:
		return Compliant
	case policyv1.NonCompliant:
		return NonCompliant
	case policyv1.Pending:
		return Pending
	}
	return Unknown // "", UnknownCompliancy, Terminating
}

// Report is the compliance of a fleet by standard, family and control.
type Report struct {
	SchemaVersion string     `json:"schemaVersion"`
	GeneratedAt   time.Time  `json:"generatedAt"`
	Clusters      []string   `json:"clusters"`
	Standards     []Standard `json:"standards"`
	// Baseline is the coverage of a baseline (--baseline), when one is asked for.
	Baseline *Coverage `json:"baseline,omitempty"`
	// HistoryHead is the compliance history's chain head when the report
	// was read with the history (history.Head): which recorded history it
	// was computed from, so that a later `flotilla compliance verify` can
	// tell whether the store still holds it.
	HistoryHead *ChainHead `json:"historyHead,omitempty"`
}

// ChainHead is a compliance history store's chain head.
type ChainHead struct {
	// Hash is the head, a SHA-256 in hex.
	Hash string `json:"hash"`
	// Seq is the number of the last event recorded.
	Seq int64 `json:"seq"`
}

// Standard groups the families of one standard (or "unmapped").
type Standard struct {
	Name     string   `json:"name"`
	Families []Family `json:"families"`
}

// Family is a control family (a policy category), e.g. "CM Configuration Management".
type Family struct {
	Item
	Controls []Control `json:"controls"`
	Counts   Counts    `json:"counts"`
}

// Control is one control with its state on each cluster its policies reach.
type Control struct {
	Item
	// Policies are the "namespace/name" of the root policies mapped to the control.
	Policies []string `json:"policies"`
	// Clusters holds one entry per cluster a mapped policy is placed on, sorted by name.
	Clusters []Cell `json:"clusters"`
	Counts   Counts `json:"counts"`
}

// Cell is a control's state on one cluster, with what violates it.
type Cell struct {
	Cluster    string      `json:"cluster"`
	State      State       `json:"state"`
	Violations []Violation `json:"violations,omitempty"`
}

// Violation is one NonCompliant policy template on a cluster and its latest message.
type Violation struct {
	Policy   string    `json:"policy"`
	Template string    `json:"template,omitempty"`
	Message  string    `json:"message,omitempty"`
	Time     time.Time `json:"time,omitzero"`
}

// Counts are numbers of clusters per state; Pending includes Unknown.
type Counts struct {
	Compliant    int `json:"compliant"`
	NonCompliant int `json:"noncompliant"`
	Pending      int `json:"pending"`
}

func (c *Counts) add(s State) {
	switch s {
	case Compliant:
		c.Compliant++
	case NonCompliant:
		c.NonCompliant++
	default:
		c.Pending++
	}
}

// Total is the number of clusters counted.
func (c Counts) Total() int { return c.Compliant + c.NonCompliant + c.Pending }

// Filter narrows a report. Zero fields select everything.
type Filter struct {
	// Standard keeps one standard, matched after normalisation ("nist 800-53"
	// selects "NIST SP 800-53").
	Standard string
	// Control keeps controls whose ID (or family ID) matches, case-insensitively:
	// "AC-6" selects AC-6 and its enhancements, "AC" the whole family.
	Control string
	// Clusters keeps only these clusters.
	Clusters []string
}

// Input is what Build reads: root policies and the replicas in cluster namespaces.
type Input struct {
	Roots    []policyv1.Policy
	Replicas []policyv1.Policy
	// Now stamps the report; tests fix it.
	Now time.Time
}

// Build computes the report. It is pure: same input, same report.
func Build(in Input, f Filter) *Report {
	replicas := indexReplicas(in.Replicas)
	keepCluster := clusterFilter(f.Clusters)
	wantStd := ""
	if f.Standard != "" {
		wantStd = strings.ToLower(NormalizeStandard(f.Standard))
	}

	b := newBuilder()
	for i := range in.Roots {
		p := &in.Roots[i]
		if p.Spec.Disabled {
			continue
		}
		name := p.Namespace + "/" + p.Name
		cells := make([]Cell, 0, len(p.Status.Status))
		for _, s := range p.Status.Status {
			if s == nil || s.ClusterName == "" || !keepCluster(s.ClusterName) {
				continue
			}
			c := Cell{Cluster: s.ClusterName, State: stateOf(s.ComplianceState)}
			if c.State == NonCompliant {
				c.Violations = violations(name, replicas[replicaKey{s.ClusterNamespace, p.Namespace + "." + p.Name}])
				if len(c.Violations) == 0 {
					c.Violations = []Violation{{Policy: name}}
				}
			}
			cells = append(cells, c)
		}
		for _, m := range mappings(Classify(p.Annotations)) {
			m = official(m)
			if wantStd != "" && strings.ToLower(m.standard) != wantStd {
				continue
			}
			if !controlMatches(f.Control, m.family, m.control) {
				continue
			}
			b.add(m, name, cells)
		}
	}
	return b.report(in.Now)
}

type replicaKey struct{ namespace, name string }

func indexReplicas(list []policyv1.Policy) map[replicaKey]*policyv1.Policy {
	out := make(map[replicaKey]*policyv1.Policy, len(list))
	for i := range list {
		out[replicaKey{list[i].Namespace, list[i].Name}] = &list[i]
	}
	return out
}

func clusterFilter(names []string) func(string) bool {
	if len(names) == 0 {
		return func(string) bool { return true }
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// violations lists a replica's NonCompliant templates with their newest history entry.
func violations(policy string, replica *policyv1.Policy) []Violation {
	if replica == nil {
		return nil
	}
	var out []Violation
	for _, d := range replica.Status.Details {
		if d == nil || d.ComplianceState != policyv1.NonCompliant {
			continue
		}
		v := Violation{Policy: policy, Template: d.TemplateMeta.Name}
		if h := latest(d.History); h != nil {
			v.Message = h.Message
			v.Time = h.LastTimestamp.Time.UTC()
		}
		out = append(out, v)
	}
	return out
}

// latest is the newest history entry (the list is newest first, but do not
// rely on it when timestamps say otherwise).
func latest(hs []policyv1.ComplianceHistory) *policyv1.ComplianceHistory {
	var best *policyv1.ComplianceHistory
	for i := range hs {
		if best == nil || hs[i].LastTimestamp.After(best.LastTimestamp.Time) {
			best = &hs[i]
		}
	}
	return best
}

func controlMatches(want string, family, control Item) bool {
	if want == "" {
		return true
	}
	w := ParseControl(want)
	if w.ID != "" {
		return control.ID == w.ID || strings.HasPrefix(control.ID, w.ID+"(")
	}
	fam := ParseFamily(want)
	if fam.ID != "" {
		return family.ID == fam.ID
	}
	return strings.EqualFold(control.Label(), want) || strings.EqualFold(control.Title, want)
}
