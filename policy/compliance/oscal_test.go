package compliance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/defenseunicorns/go-oscal/src/pkg/validation"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// validateOSCAL validates an OSCAL document against the OSCAL JSON schema of
// its oscal-version, as go-oscal ships it.
func validateOSCAL(t *testing.T, doc []byte) {
	t.Helper()
	v, err := validation.NewValidator(doc)
	if err != nil {
		t.Fatalf("go-oscal cannot read the document: %v", err)
	}
	if err := v.Validate(); err != nil {
		res, _ := v.GetValidationResult()
		msgs, _ := json.MarshalIndent(res.Errors, "", "  ")
		t.Fatalf("not valid OSCAL %s %s: %v\n%s", v.GetModelType(), v.GetSchemaVersion(), err, msgs)
	}
	if v.GetModelType() != "assessment-results" || v.GetSchemaVersion() != OSCALVersion {
		t.Fatalf("validated as %s %s, want assessment-results %s", v.GetModelType(), v.GetSchemaVersion(), OSCALVersion)
	}
}

func TestOSCALGolden(t *testing.T) {
	out := render(t, FormatOSCAL, RenderOptions{})
	golden(t, "report.oscal.json.golden", out)
	validateOSCAL(t, out)
}

// TestOSCAL checks what the document says, on the golden fleet.
func TestOSCAL(t *testing.T) {
	doc := AssessmentResults(fleet()).AssessmentResults
	if doc.Metadata.OscalVersion != OSCALVersion || !doc.Metadata.LastModified.Equal(t0) || doc.Metadata.Version != SchemaVersion {
		t.Errorf("metadata = %+v", doc.Metadata)
	}
	res := doc.Results[0]
	items := *res.LocalDefinitions.InventoryItems
	if len(items) != 3 || items[0].Description != "Managed cluster east" {
		t.Errorf("inventory items (subjects) = %+v", items)
	}
	reviewed := *res.ReviewedControls.ControlSelections[0].IncludeControls
	var ids []string
	for _, c := range reviewed {
		ids = append(ids, c.ControlId)
	}
	if got := strings.Join(ids, ","); got != "ac-2,ac-6,ac-6.1,cm-2,cm-6,sc-6,sc-7,sc-28" {
		t.Errorf("reviewed controls = %s, want the baseline's", got)
	}
	findings := map[string]string{}
	for _, f := range *res.Findings {
		findings[f.Target.TargetId] = f.Target.Status.State + "/" + f.Target.Status.Reason
	}
	want := map[string]string{
		"ac-6": "not-satisfied/fail", "ac-6.1": "not-satisfied/fail", "cm-2": "not-satisfied/fail",
		"sc-6": "not-satisfied/other", "sc-28": "satisfied/pass", "pr.pt-3": "satisfied/pass",
		"ac-2": "not-satisfied/other", "cm-6": "not-satisfied/other", "sc-7": "not-satisfied/other",
	}
	for id, w := range want {
		if findings[id] != w {
			t.Errorf("finding %s = %q, want %q", id, findings[id], w)
		}
	}
	if len(findings) != len(want) {
		t.Errorf("findings for %v, want exactly %v", findings, want)
	}
	// The violation on west carries its policy message and time.
	found := false
	for _, o := range *res.Observations {
		if strings.Contains(o.Description, "roles [deployments-role] found but not as specified") && o.Collected.Equal(t0) &&
			(*o.Subjects)[0].Type == "inventory-item" && (*o.Subjects)[0].Title == "west" {
			found = true
		}
	}
	if !found {
		t.Error("no observation of policy-role's message on west")
	}
}

// TestOSCALEdgeCases: documents from an empty report, from one without a
// baseline and from odd annotations (other standards, titles only, unicode,
// huge IDs, a cluster name with a space) are valid too.
func TestOSCALEdgeCases(t *testing.T) {
	r := fleet()
	r.Baseline = nil
	odd := Build(Input{Now: t0, Roots: []policyv1.Policy{
		root("ns", "odd").annotate("ISO 27001, NIST-CSF, nist", "  , PR.PT, Données", "AC-99999999999999999999(1), PR.DS-1 Data-at-rest, Konfiguration ✓, SI-4.2").
			on("c1", policyv1.NonCompliant).on("c 2", "").obj(),
	}}, Filter{})
	for name, rep := range map[string]*Report{"empty": Build(Input{Now: t0}, Filter{}), "no baseline": r, "odd annotations": odd} {
		t.Run(name, func(t *testing.T) {
			var buf strings.Builder
			if err := WriteOSCAL(&buf, rep); err != nil {
				t.Fatal(err)
			}
			validateOSCAL(t, []byte(buf.String()))
		})
	}
}

// TestOSCALValidationRefuses: the validator the tests rely on does refuse a
// broken document (a finding state OSCAL does not know, a malformed UUID).
func TestOSCALValidationRefuses(t *testing.T) {
	out := string(render(t, FormatOSCAL, RenderOptions{}))
	for name, broken := range map[string]string{
		"state":     strings.Replace(out, `"state": "satisfied"`, `"state": "fine"`, 1),
		"uuid":      strings.Replace(out, `"uuid": "297996c9-67da-5331-b539-ac595520497c"`, `"uuid": "cluster-east"`, 1),
		"no import": strings.Replace(out, `"import-ap"`, `"import-plan"`, 1),
	} {
		if broken == out {
			t.Fatalf("%s: the golden document changed; update this test", name)
		}
		v, err := validation.NewValidator([]byte(broken))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(); err == nil {
			t.Errorf("%s: a broken document passed validation", name)
		}
	}
}

// TestOSCALHistoryHead: a report read with the history carries the chain
// head it was computed from in the document's metadata, and stays valid.
func TestOSCALHistoryHead(t *testing.T) {
	r := fleet()
	r.HistoryHead = &ChainHead{Hash: strings.Repeat("ab", 32), Seq: 4211}
	models := AssessmentResults(r)
	got := map[string]string{}
	for _, p := range *models.AssessmentResults.Metadata.Props {
		got[p.Name] = p.Value
	}
	if got["history-chain-head"] != r.HistoryHead.Hash || got["history-chain-seq"] != "4211" || got["generator"] != "flotilla" {
		t.Fatalf("metadata props = %v, want the generator and the chain head", got)
	}
	out, err := json.Marshal(models)
	if err != nil {
		t.Fatal(err)
	}
	validateOSCAL(t, out)
	if bare := AssessmentResults(fleet()).AssessmentResults.Metadata.Props; len(*bare) != 1 {
		t.Fatalf("without the history: props %v, want the generator only", *bare)
	}
}
