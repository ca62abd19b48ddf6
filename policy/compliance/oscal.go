package compliance

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	oscal "github.com/defenseunicorns/go-oscal/src/types/oscal-1-1-3"
	"github.com/google/uuid"

	"flotilla.dev/flotilla/policy/compliance/nist"
)

// OSCALVersion is the OSCAL version of the -o oscal document.
const OSCALVersion = oscal.Version

// oscalNS is the namespace of the props Flotilla adds to OSCAL objects.
const oscalNS = "https://flotilla.dev/ns/oscal"

// uuidSpace seeds the document's UUIDs (version 5): the same report gives the
// same document, and a cluster keeps its UUID from one report to the next.
var uuidSpace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://flotilla.dev/compliance"))

func oscalUUID(parts ...string) string {
	return uuid.NewSHA1(uuidSpace, []byte(strings.Join(parts, "\x00"))).String()
}

// WriteOSCAL writes the report as an OSCAL assessment-results document (JSON).
func WriteOSCAL(w io.Writer, r *Report) error {
	return WriteJSON(w, AssessmentResults(r))
}

// AssessmentResults builds the OSCAL assessment-results document of r: one
// result with the clusters as inventory items (the subjects), observations
// per control (one per violating policy template and cluster, with its
// message and time; one per other state, its subjects the clusters in that
// state), and a finding per control: satisfied when every
// cluster its policies reach is Compliant. With a baseline, the result reviews
// the baseline's controls and each one no policy covers gets a not-satisfied
// finding. Controls without an ID (unmapped policies, title-only entries) are
// left out: OSCAL refers to controls by ID.
func AssessmentResults(r *Report) *oscal.OscalModels {
	stamp := r.GeneratedAt.UTC().Format(time.RFC3339Nano)
	apUUID := oscalUUID("assessment-plan", stamp)
	doc := &oscal.AssessmentResults{
		UUID: oscalUUID("assessment-results", stamp),
		Metadata: oscal.Metadata{
			Title:        "Flotilla compliance report",
			LastModified: r.GeneratedAt.UTC(),
			Version:      SchemaVersion,
			OscalVersion: OSCALVersion,
			Props:        metadataProps(r),
		},
		ImportAp: oscal.ImportAp{
			Href:    "#" + apUUID,
			Remarks: "Flotilla assesses the governance policies placed on the fleet; there is no separate assessment plan.",
		},
		BackMatter: &oscal.BackMatter{Resources: &[]oscal.Resource{{
			UUID:        apUUID,
			Title:       "Flotilla governance policies",
			Description: "The assessment is the compliance the fleet's policies report, read from the hub at " + stamp + ".",
		}}},
	}
	res := oscal.Result{
		UUID:        oscalUUID("result", stamp),
		Title:       fmt.Sprintf("Compliance of %d clusters by control", len(r.Clusters)),
		Description: "Each control's compliance per cluster, from the governance policies mapped to it by their standards, categories and controls annotations.",
		Start:       r.GeneratedAt.UTC(),
	}
	if len(r.Clusters) > 0 {
		var items []oscal.InventoryItem
		for _, c := range r.Clusters {
			items = append(items, oscal.InventoryItem{
				UUID: clusterUUID(c), Description: "Managed cluster " + c, Props: props("cluster", c),
			})
		}
		res.LocalDefinitions = &oscal.LocalDefinitions{InventoryItems: &items}
	}

	var observations []oscal.Observation
	var findings []oscal.Finding
	var reviewed []oscal.AssessedControlsSelectControlById
	seen := map[string]bool{}
	review := func(id string) {
		if !seen[id] {
			seen[id] = true
			reviewed = append(reviewed, oscal.AssessedControlsSelectControlById{ControlId: id})
		}
	}
	if r.Baseline != nil {
		for _, f := range r.Baseline.Families {
			for _, c := range f.Controls {
				review(nist.OSCALID(c.ID))
			}
		}
	}
	r.eachControl(func(s *Standard, f *Family, c *Control) {
		if c.ID == "" || s.Name == Unmapped {
			return
		}
		id := nist.OSCALID(c.ID)
		if r.Baseline == nil {
			review(id)
		}
		var related []oscal.RelatedObservation
		for _, o := range observationsOf(stamp, s, c, r.GeneratedAt) {
			observations = append(observations, o)
			related = append(related, oscal.RelatedObservation{ObservationUuid: o.UUID})
		}
		fd := oscal.Finding{
			UUID:        oscalUUID("finding", stamp, s.Name, c.ID),
			Title:       s.Name + " " + c.Label(),
			Description: findingText(c),
			Target: oscal.FindingTarget{
				Type: "objective-id", TargetId: id, Title: c.Label(),
				Status: findingStatus(c),
			},
			Props: props("standard", s.Name, "family", f.Label(), "policies", strings.Join(c.Policies, ", ")),
		}
		if len(related) > 0 {
			fd.RelatedObservations = &related
		}
		findings = append(findings, fd)
	})
	if r.Baseline != nil {
		for _, f := range r.Baseline.Families {
			for _, c := range f.Uncovered {
				findings = append(findings, oscal.Finding{
					UUID:        oscalUUID("finding", stamp, nist.Standard, c.ID),
					Title:       nist.Standard + " " + c.Label(),
					Description: "No policy covers this control of the baseline " + r.Baseline.Baseline + ".",
					Target: oscal.FindingTarget{
						Type: "objective-id", TargetId: nist.OSCALID(c.ID), Title: c.Label(),
						Status: oscal.ObjectiveStatus{State: "not-satisfied", Reason: "other", Remarks: "not covered by any policy"},
					},
					Props: props("standard", nist.Standard, "family", f.Label(), "baseline-status", BaselineUncovered),
				})
			}
		}
	}

	if len(reviewed) > 0 {
		res.ReviewedControls.ControlSelections = []oscal.AssessedControls{{IncludeControls: &reviewed}}
	} else {
		res.ReviewedControls.ControlSelections = []oscal.AssessedControls{{IncludeAll: &oscal.IncludeAll{}}}
	}
	if r.Baseline != nil {
		res.ReviewedControls.Description = "The controls of the baseline " + r.Baseline.Baseline + " (" + r.Baseline.Source + "; catalog " + r.Baseline.Catalog + ")."
	}
	if len(observations) > 0 {
		res.Observations = &observations
	}
	if len(findings) > 0 {
		res.Findings = &findings
	}
	doc.Results = []oscal.Result{res}
	return &oscal.OscalModels{AssessmentResults: doc}
}

// metadataProps are the document's props: the generator and, when the
// report was read with the history, the history's chain head it was computed
// from (NIST SP 800-53 AU-9, AU-10: the store can be checked against it).
func metadataProps(r *Report) *[]oscal.Property {
	if r.HistoryHead == nil {
		return props("generator", "flotilla")
	}
	return props("generator", "flotilla", "history-chain-head", r.HistoryHead.Hash, "history-chain-seq", strconv.FormatInt(r.HistoryHead.Seq, 10))
}

func clusterUUID(name string) string { return oscalUUID("cluster", name) }

// observationsOf describes a control on the clusters its policies reach: one
// observation per state other than NonCompliant, whose subjects are the
// clusters in that state, and one per violating policy template on each
// NonCompliant cluster, with the policy's message and its time.
func observationsOf(stamp string, s *Standard, c *Control, now time.Time) []oscal.Observation {
	subject := func(cluster string) oscal.SubjectReference {
		return oscal.SubjectReference{SubjectUuid: clusterUUID(cluster), Type: "inventory-item", Title: cluster}
	}
	var out []oscal.Observation
	byState := map[State][]oscal.SubjectReference{}
	for _, cell := range c.Clusters {
		if cell.State != NonCompliant || len(cell.Violations) == 0 {
			byState[cell.State] = append(byState[cell.State], subject(cell.Cluster))
			continue
		}
		for _, v := range cell.Violations {
			when := v.Time
			if when.IsZero() {
				when = now
			}
			desc := v.Message
			if desc == "" {
				desc = "Policy " + v.Policy + " is NonCompliant on cluster " + cell.Cluster + " (no message reported yet)."
			}
			out = append(out, oscal.Observation{
				UUID:        oscalUUID("observation", stamp, s.Name, c.ID, cell.Cluster, v.Policy, v.Template),
				Title:       c.ID + " on " + cell.Cluster + ": " + v.Policy + " is NonCompliant",
				Description: desc,
				Methods:     []string{"TEST"},
				Collected:   when.UTC(),
				Subjects:    &[]oscal.SubjectReference{subject(cell.Cluster)},
				Props:       props("control-id", c.ID, "state", string(NonCompliant), "policy", v.Policy, "template", v.Template),
			})
		}
	}
	for _, st := range []State{NonCompliant, Pending, Unknown, Compliant} {
		subjects := byState[st]
		if len(subjects) == 0 {
			continue
		}
		names := make([]string, len(subjects))
		for i, sub := range subjects {
			names[i] = sub.Title
		}
		out = append(out, oscal.Observation{
			UUID:        oscalUUID("observation", stamp, s.Name, c.ID, string(st)),
			Title:       fmt.Sprintf("%s %s on %d clusters", c.ID, st, len(subjects)),
			Description: fmt.Sprintf("%s %s is %s on %s (policies: %s).", s.Name, c.Label(), st, strings.Join(names, ", "), strings.Join(c.Policies, ", ")),
			Methods:     []string{"TEST"},
			Collected:   now.UTC(),
			Subjects:    &subjects,
			Props:       props("control-id", c.ID, "state", string(st)),
		})
	}
	return out
}

func findingStatus(c *Control) oscal.ObjectiveStatus {
	switch {
	case c.Counts.NonCompliant > 0:
		return oscal.ObjectiveStatus{State: "not-satisfied", Reason: "fail"}
	case c.Counts.Pending > 0 || c.Counts.Total() == 0:
		return oscal.ObjectiveStatus{State: "not-satisfied", Reason: "other", Remarks: "pending or unknown on some clusters"}
	}
	return oscal.ObjectiveStatus{State: "satisfied", Reason: "pass"}
}

func findingText(c *Control) string {
	text := fmt.Sprintf("Compliant on %d, noncompliant on %d, pending or unknown on %d clusters.",
		c.Counts.Compliant, c.Counts.NonCompliant, c.Counts.Pending)
	if v := c.ViolatingClusters(); len(v) > 0 {
		text += " Violating clusters: " + strings.Join(v, ", ") + "."
	}
	return text
}

// props builds OSCAL properties from name, value pairs, leaving out empty
// values (OSCAL refuses them) and trimming the others.
func props(kv ...string) *[]oscal.Property {
	var out []oscal.Property
	for i := 0; i+1 < len(kv); i += 2 {
		v := strings.Join(strings.Fields(kv[i+1]), " ")
		if v != "" {
			out = append(out, oscal.Property{Name: kv[i], Ns: oscalNS, Value: v})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &out
}
