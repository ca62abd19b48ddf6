package compliance

import (
	"reflect"
	"testing"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

const (
	sp80053 = "NIST SP 800-53"
	cm      = "CM Configuration Management"
)

// cellsOf returns control id -> cluster -> state for one standard.
func cellsOf(r *Report, standard string) map[string]map[string]State {
	out := map[string]map[string]State{}
	for _, s := range r.Standards {
		if s.Name != standard {
			continue
		}
		for _, f := range s.Families {
			for _, c := range f.Controls {
				m := map[string]State{}
				for _, cell := range c.Clusters {
					m[cell.Cluster] = cell.State
				}
				out[c.Key()] = m
			}
		}
	}
	return out
}

func TestPrecedence(t *testing.T) {
	cases := []struct {
		name   string
		states []policyv1.ComplianceState // one policy per state, all mapped to CM-2 on c1
		want   State
	}{
		{"all compliant", []policyv1.ComplianceState{policyv1.Compliant, policyv1.Compliant}, Compliant},
		{"one noncompliant wins", []policyv1.ComplianceState{policyv1.Compliant, policyv1.Pending, policyv1.NonCompliant}, NonCompliant},
		{"pending over compliant", []policyv1.ComplianceState{policyv1.Compliant, policyv1.Pending}, Pending},
		{"pending over unknown", []policyv1.ComplianceState{"", policyv1.Pending}, Pending},
		{"unknown over compliant", []policyv1.ComplianceState{policyv1.Compliant, policyv1.UnknownCompliancy}, Unknown},
		{"no state yet is unknown", []policyv1.ComplianceState{""}, Unknown},
		{"terminating is unknown", []policyv1.ComplianceState{policyv1.Terminating}, Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in Input
			for i, s := range tc.states {
				in.Roots = append(in.Roots, root("default", string(rune('a'+i))).annotate(sp80053, cm, "CM-2 Baseline Configuration").on("c1", s).obj())
			}
			got := cellsOf(Build(in, Filter{}), sp80053)["CM-2"]["c1"]
			if got != tc.want {
				t.Fatalf("state = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuildGroupsAndMessages(t *testing.T) {
	in := Input{
		Now: t0,
		Roots: []policyv1.Policy{
			root("policies", "baseline").annotate(sp80053, cm, "CM-2 Baseline Configuration, CM-6 Configuration Settings").
				on("c1", policyv1.Compliant).on("c2", policyv1.NonCompliant).obj(),
			root("policies", "ns-quota").annotate("NIST", "CM", "CM-2").on("c1", policyv1.NonCompliant).obj(),
			root("policies", "no-annotations").on("c1", policyv1.Compliant).obj(),
			root("policies", "off").annotate(sp80053, cm, "CM-2").disabled().on("c3", policyv1.NonCompliant).obj(),
		},
		Replicas: []policyv1.Policy{
			replica("policies", "baseline", "c2",
				tmpl{"cfg-ok", policyv1.Compliant, []string{"Compliant; notification - fine"}},
				tmpl{"cfg-bad", policyv1.NonCompliant, []string{"NonCompliant; violation - configmaps [x] not found in namespace default", "Compliant; older"}}),
		},
	}
	r := Build(in, Filter{})
	if want := []string{"c1", "c2"}; !reflect.DeepEqual(r.Clusters, want) {
		t.Fatalf("clusters = %v, want %v (a disabled policy's clusters are left out)", r.Clusters, want)
	}
	if len(r.Standards) != 2 || r.Standards[0].Name != sp80053 || r.Standards[1].Name != Unmapped {
		t.Fatalf("standards = %+v, want NIST SP 800-53 then unmapped", r.Standards)
	}
	got := cellsOf(r, sp80053)
	want := map[string]map[string]State{
		"CM-2": {"c1": NonCompliant, "c2": NonCompliant},
		"CM-6": {"c1": Compliant, "c2": NonCompliant},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cells = %v, want %v", got, want)
	}
	fam := r.Standards[0].Families[0]
	if fam.Item != (Item{ID: "CM", Title: "Configuration Management"}) {
		t.Fatalf("family = %+v", fam.Item)
	}
	cm2 := fam.Controls[0]
	if cm2.Title != "Baseline Configuration" {
		t.Errorf("CM-2 title = %q: the title from any policy should fill in a bare ID", cm2.Title)
	}
	if want := []string{"policies/baseline", "policies/ns-quota"}; !reflect.DeepEqual(cm2.Policies, want) {
		t.Errorf("CM-2 policies = %v, want %v", cm2.Policies, want)
	}
	if cm2.Counts != (Counts{NonCompliant: 2}) {
		t.Errorf("CM-2 counts = %+v", cm2.Counts)
	}
	c2 := cm2.Clusters[1]
	wantV := []Violation{{Policy: "policies/baseline", Template: "cfg-bad",
		Message: "NonCompliant; violation - configmaps [x] not found in namespace default", Time: t0}}
	if !reflect.DeepEqual(c2.Violations, wantV) {
		t.Errorf("c2 violations = %+v, want %+v", c2.Violations, wantV)
	}
	// No replica for ns-quota on c1: the policy is still named as the violator.
	if v := cm2.Clusters[0].Violations; len(v) != 1 || v[0].Policy != "policies/ns-quota" || v[0].Message != "" {
		t.Errorf("c1 violations = %+v, want policies/ns-quota with no message", v)
	}
	un := r.Standards[1].Families[0].Controls[0]
	if un.Title != Unmapped || !reflect.DeepEqual(un.Policies, []string{"policies/no-annotations"}) {
		t.Errorf("unmapped control = %+v", un)
	}
}

func TestFilter(t *testing.T) {
	in := Input{Roots: []policyv1.Policy{
		root("p", "a").annotate(sp80053, "AC Access Control", "AC-6, AC-6(1) Least Privilege, AC-2").on("c1", policyv1.NonCompliant).on("c2", policyv1.Compliant).obj(),
		root("p", "b").annotate("NIST-CSF", "PR.PT Protective Technology", "PR.PT-3").on("c1", policyv1.Compliant).obj(),
		root("p", "c").on("c2", policyv1.Compliant).obj(),
	}}
	keys := func(r *Report) []string {
		var out []string
		for _, s := range r.Standards {
			for _, f := range s.Families {
				for _, c := range f.Controls {
					out = append(out, s.Name+"|"+c.Key())
				}
			}
		}
		return out
	}
	cases := []struct {
		name string
		f    Filter
		want []string
	}{
		{"all, controls in natural order", Filter{}, []string{"NIST SP 800-53|AC-2", "NIST SP 800-53|AC-6", "NIST SP 800-53|AC-6(1)", "NIST-CSF|PR.PT-3", "unmapped|unmapped"}},
		{"standard by alias", Filter{Standard: "nist 800-53"}, []string{"NIST SP 800-53|AC-2", "NIST SP 800-53|AC-6", "NIST SP 800-53|AC-6(1)"}},
		{"control with enhancements", Filter{Control: "ac-6"}, []string{"NIST SP 800-53|AC-6", "NIST SP 800-53|AC-6(1)"}},
		{"enhancement only", Filter{Control: "AC-6(1)"}, []string{"NIST SP 800-53|AC-6(1)"}},
		{"family", Filter{Control: "PR.PT"}, []string{"NIST-CSF|PR.PT-3"}},
		{"unknown standard", Filter{Standard: "HIPAA"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(Build(in, tc.f)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("controls = %v, want %v", got, tc.want)
			}
		})
	}
	r := Build(in, Filter{Clusters: []string{"c2"}})
	if !reflect.DeepEqual(r.Clusters, []string{"c2"}) {
		t.Fatalf("clusters = %v, want [c2]", r.Clusters)
	}
	if got := cellsOf(r, sp80053)["AC-6"]; !reflect.DeepEqual(got, map[string]State{"c2": Compliant}) {
		t.Fatalf("AC-6 on c2 only = %v", got)
	}
}

func TestMappingFamilies(t *testing.T) {
	// A control goes to the category its ID prefixes; a category with no
	// control is kept with "(no control)"; a control with no category gets a
	// family named after its prefix.
	got := mappings(Classify(map[string]string{
		policyv1.StandardsAnnotation:  sp80053,
		policyv1.CategoriesAnnotation: "AC Access Control, AU Audit and Accountability",
		policyv1.ControlsAnnotation:   "AC-3, SC-28",
	}))
	want := []mapping{
		{sp80053, Item{ID: "AC", Title: "Access Control"}, Item{ID: "AC-3"}},
		{sp80053, Item{ID: "SC"}, Item{ID: "SC-28"}},
		{sp80053, Item{ID: "AU", Title: "Audit and Accountability"}, noControl},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mappings:\n got %+v\nwant %+v", got, want)
	}
}
