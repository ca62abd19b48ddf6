package compliance

import (
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance/nist"
)

// TestOfficialTitles: NIST SP 800-53 controls and families get the catalog's
// titles whatever policy-collection's annotations wrote (no title, a
// misspelling, odd case or spacing); other standards and IDs the catalog does
// not know keep the annotation's.
func TestOfficialTitles(t *testing.T) {
	cases := []struct {
		name                            string
		standards, categories, controls string
		wantFamily, wantControl         string
	}{
		{"policy-collection spelling", "NIST SP 800-53", "CM Configuration Management", "CM-2 Baseline Configuration",
			"CM Configuration Management", "CM-2 Baseline Configuration"},
		{"no title", "NIST SP 800-53", "AC Access Control", "AC-6(1)",
			"AC Access Control", "AC-6(1) Authorize Access to Security Functions"},
		{"misspelt title and family", "NIST 800-53", "SC System and Communication Protection", "SC-28 Protection of Info at Rest",
			"SC System and Communications Protection", "SC-28 Protection of Information at Rest"},
		{"lower case, spaced enhancement", "nist sp 800-53", "ac", "ac-2 (1)",
			"AC Access Control", "AC-2(1) Automated System Account Management"},
		{"zero-padded id", "NIST SP 800-53", "SI System and Information Integrity", "SI-04 System Monitoring",
			"SI System and Information Integrity", "SI-4 System Monitoring"},
		{"no category: the family from the ID", "NIST SP 800-53", "", "SC-6",
			"SC System and Communications Protection", "SC-6 Resource Availability"},
		{"unknown to the catalog", "NIST SP 800-53", "AC Access Control", "AC-99 Made Up",
			"AC Access Control", "AC-99 Made Up"},
		{"other standard untouched", "NIST-CSF", "PR.PT Protective Technology", "PR.PT-3 Least Functionality",
			"PR.PT Protective Technology", "PR.PT-3 Least Functionality"},
		{"NIST-CSF with an 800-53-like id", "NIST-CSF", "AC Whatever", "AC-6 Not Least Privilege",
			"AC Whatever", "AC-6 Not Least Privilege"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Roots: []policyv1.Policy{root("p", "a").annotate(tc.standards, tc.categories, tc.controls).on("c1", policyv1.Compliant).obj()}}
			r := Build(in, Filter{})
			f := r.Standards[0].Families[0]
			if f.Label() != tc.wantFamily || f.Controls[0].Label() != tc.wantControl {
				t.Errorf("got %q / %q, want %q / %q", f.Label(), f.Controls[0].Label(), tc.wantFamily, tc.wantControl)
			}
		})
	}
}

// statuses flattens a coverage to id -> status.
func statuses(c *Coverage) map[string]string {
	out := map[string]string{}
	for _, f := range c.Families {
		for _, ctl := range f.Controls {
			out[ctl.ID] = ctl.Status
		}
	}
	return out
}

// TestCover is the baseline coverage of the golden fleet (testdata/baseline-profile.json).
func TestCover(t *testing.T) {
	cov := fleet().Baseline
	want := map[string]string{
		"AC-2": BaselineUncovered, "AC-6": BaselineNotMet, "AC-6(1)": BaselineNotMet,
		"CM-2": BaselineNotMet, "CM-6": BaselineUncovered,
		"SC-6": BaselineNotMet, // Pending on west, not placed on edge-1
		"SC-7": BaselineUncovered, "SC-28": BaselineMet,
	}
	if got := statuses(cov); !reflect.DeepEqual(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	if cov.InBaseline != 8 || cov.Covered != 5 || cov.Met != 1 || len(cov.Families) != 3 {
		t.Errorf("totals %+v over %d families", cov.CoverageCounts, len(cov.Families))
	}
	if f := cov.Families[2]; f.ID != "SC" || f.Title != "System and Communications Protection" || f.InBaseline != 3 || f.Covered != 2 || f.Met != 1 ||
		len(f.Uncovered) != 1 || f.Uncovered[0] != (Item{"SC-7", "Boundary Protection"}) {
		t.Errorf("SC = %+v", f)
	}
}

func TestCoverRules(t *testing.T) {
	moderate, _ := nist.Default().Baseline("moderate")
	cases := []struct {
		name   string
		roots  []policyv1.Policy
		filter Filter
		want   map[string]string // statuses of some controls
	}{
		{"an enhancement is its own control",
			[]policyv1.Policy{root("p", "a").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.Compliant).obj()},
			Filter{}, map[string]string{"AC-6": BaselineMet, "AC-6(1)": BaselineUncovered}},
		{"met needs every cluster of the report",
			[]policyv1.Policy{
				root("p", "a").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.Compliant).obj(),
				root("p", "b").annotate(sp80053, "CM Configuration Management", "CM-2").on("c2", policyv1.Compliant).obj(),
			},
			Filter{}, map[string]string{"AC-6": BaselineNotMet, "CM-2": BaselineNotMet}},
		{"precedence across policies",
			[]policyv1.Policy{
				root("p", "a").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.Compliant).obj(),
				root("p", "b").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.NonCompliant).obj(),
			},
			Filter{}, map[string]string{"AC-6": BaselineNotMet}},
		{"same control under two categories is one control",
			[]policyv1.Policy{
				root("p", "a").annotate(sp80053, "Access Control", "AC-6").on("c1", policyv1.Compliant).obj(),
				root("p", "b").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.Compliant).obj(),
			},
			Filter{}, map[string]string{"AC-6": BaselineMet}},
		{"other standards do not cover NIST SP 800-53",
			[]policyv1.Policy{root("p", "a").annotate("NIST-CSF", "AC Access", "AC-6").on("c1", policyv1.Compliant).obj()},
			Filter{}, map[string]string{"AC-6": BaselineUncovered}},
		{"clusters filter selects the clusters that must comply",
			[]policyv1.Policy{root("p", "a").annotate(sp80053, "AC Access Control", "AC-6").on("c1", policyv1.Compliant).on("c2", policyv1.NonCompliant).obj()},
			Filter{Clusters: []string{"c1"}}, map[string]string{"AC-6": BaselineMet}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(Input{Roots: tc.roots, Now: t0}, tc.filter)
			got := statuses(Cover(r, moderate, tc.filter))
			for id, w := range tc.want {
				if got[id] != w {
					t.Errorf("%s = %q, want %q", id, got[id], w)
				}
			}
			if len(got) != 287 {
				t.Errorf("%d controls in Moderate, want 287", len(got))
			}
		})
	}
}

// TestCoverControlFilter: --control narrows the baseline too.
func TestCoverControlFilter(t *testing.T) {
	moderate, _ := nist.Default().Baseline("moderate")
	f := Filter{Control: "AC-6"}
	r := Build(Input{Roots: []policyv1.Policy{root("p", "a").annotate(sp80053, "AC Access Control", "AC-6, AC-6(1)").on("c1", policyv1.Compliant).obj()}}, f)
	cov := Cover(r, moderate, f)
	var ids []string
	for id := range statuses(cov) {
		ids = append(ids, id)
	}
	if len(cov.Families) != 1 || cov.InBaseline != 7 || cov.Met != 2 {
		t.Errorf("AC-6 in Moderate: %+v (%s)", cov.CoverageCounts, strings.Join(ids, " "))
	}
}

func TestNoBaselineSection(t *testing.T) {
	r := fleet()
	r.Baseline = nil
	for _, format := range []string{FormatTable, FormatHTML} {
		var b strings.Builder
		if err := Render(&b, format, r, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "aseline:") || strings.Contains(b.String(), "BASELINE") {
			t.Errorf("%s has a baseline section without a baseline", format)
		}
	}
}

// BenchmarkCoverAndOSCAL: coverage of High and the OSCAL document for 500
// policies (one control each, over the High baseline) on 1,000 clusters, one
// in ten NonCompliant.
func BenchmarkCoverAndOSCAL(b *testing.B) {
	high, _ := nist.Default().Baseline("high")
	var in Input
	in.Now = t0
	for i := 0; i < 500; i++ {
		id := high.Controls[i%len(high.Controls)]
		p := root("p", "policy-"+strconv.Itoa(i)).annotate(sp80053, FamilyOf(Item{ID: id}), id)
		for c := 0; c < 1000; c++ {
			s := policyv1.Compliant
			if (i+c)%10 == 0 {
				s = policyv1.NonCompliant
			}
			p.on("cluster-"+strconv.Itoa(c), s)
		}
		in.Roots = append(in.Roots, p.obj())
	}
	r := Build(in, Filter{})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Baseline = Cover(r, high, Filter{})
		if err := WriteOSCAL(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
