package compliance

import (
	"reflect"
	"testing"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// The annotation strings below are spellings found in public policies
// (open-cluster-management-io/policy-collection and projects built on it),
// plus the variants the issue names (enhancements, lower case, no title).
func TestClassify(t *testing.T) {
	cases := []struct {
		name                            string
		standards, categories, controls string
		want                            Classification
	}{
		{
			name: "policy-collection NIST SP 800-53", standards: "NIST SP 800-53",
			categories: "CM Configuration Management", controls: "CM-2 Baseline Configuration",
			want: Classification{Standards: []string{"NIST SP 800-53"},
				Categories: []Item{{ID: "CM", Title: "Configuration Management"}},
				Controls:   []Item{{ID: "CM-2", Title: "Baseline Configuration"}}},
		},
		{
			name: "bare NIST folds into SP 800-53", standards: "NIST",
			categories: "SC System and Communications Protection", controls: "SC-8 Transmission Confidentiality and Integrity",
			want: Classification{Standards: []string{"NIST SP 800-53"},
				Categories: []Item{{ID: "SC", Title: "System and Communications Protection"}},
				Controls:   []Item{{ID: "SC-8", Title: "Transmission Confidentiality and Integrity"}}},
		},
		{
			name: "NIST-CSF", standards: "NIST-CSF",
			categories: "PR.PT Protective Technology", controls: "PR.PT-3 Least Functionality",
			want: Classification{Standards: []string{"NIST-CSF"},
				Categories: []Item{{ID: "PR.PT", Title: "Protective Technology"}},
				Controls:   []Item{{ID: "PR.PT-3", Title: "Least Functionality"}}},
		},
		{
			name: "lists, odd spacing and case", standards: " NIST SP 800-53 ,nist-csf ",
			categories: "AC Access Control,  SI  System and Information Integrity, ",
			controls:   "AC-6(1), ac-6 (1) Least Privilege, SC-28,si-4  System Monitoring",
			want: Classification{Standards: []string{"NIST SP 800-53", "NIST-CSF"},
				Categories: []Item{{ID: "AC", Title: "Access Control"}, {ID: "SI", Title: "System and Information Integrity"}},
				Controls:   []Item{{ID: "AC-6(1)"}, {ID: "SC-28"}, {ID: "SI-4", Title: "System Monitoring"}}},
		},
		{
			name: "CSF category alone, no controls", standards: "NIST-CSF", categories: "PR.PT",
			want: Classification{Standards: []string{"NIST-CSF"}, Categories: []Item{{ID: "PR.PT"}}},
		},
		{
			name: "titles without IDs", standards: "NIST 800-53",
			categories: "Configuration Management", controls: "Baseline Configuration",
			want: Classification{Standards: []string{"NIST SP 800-53"},
				Categories: []Item{{Title: "Configuration Management"}},
				Controls:   []Item{{Title: "Baseline Configuration"}}},
		},
		{name: "empty strings (as some generators write)", want: Classification{}},
		{
			name: "other standard kept as spelled", standards: "CIS Kubernetes  Benchmark",
			categories: "5.1 RBAC and Service Accounts", controls: "5.1.3 Minimize wildcard use",
			want: Classification{Standards: []string{"CIS Kubernetes Benchmark"},
				Categories: []Item{{Title: "5.1 RBAC and Service Accounts"}},
				Controls:   []Item{{Title: "5.1.3 Minimize wildcard use"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(map[string]string{
				policyv1.StandardsAnnotation: tc.standards, policyv1.CategoriesAnnotation: tc.categories,
				policyv1.ControlsAnnotation: tc.controls,
			})
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Classify:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseControl(t *testing.T) {
	for in, want := range map[string]Item{
		"CM-2 Baseline Configuration": {ID: "CM-2", Title: "Baseline Configuration"},
		"AC-6(1)":                     {ID: "AC-6(1)"},
		"AC-6 (1)":                    {ID: "AC-6(1)"},
		"ac - 6":                      {ID: "AC-6"},
		"SC-28":                       {ID: "SC-28"},
		"AC-02 Account Management":    {ID: "AC-2", Title: "Account Management"},
		"SI-4.2":                      {ID: "SI-4(2)"},
		"PR.DS-1 Data-at-rest":        {ID: "PR.DS-1", Title: "Data-at-rest"},
		"SC-6: Resource Availability": {ID: "SC-6", Title: "Resource Availability"},
		"Least Privilege":             {Title: "Least Privilege"},
	} {
		if got := ParseControl(in); got != want {
			t.Errorf("ParseControl(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestNormalizeStandard(t *testing.T) {
	for in, want := range map[string]string{
		"NIST SP 800-53": "NIST SP 800-53", "nist sp 800-53": "NIST SP 800-53", "NIST 800-53": "NIST SP 800-53",
		"NIST": "NIST SP 800-53", "NIST SP 800-53 Rev 5": "NIST SP 800-53", "NIST-CSF": "NIST-CSF", "nist csf": "NIST-CSF",
		"PCI DSS": "PCI-DSS", "Custom  Standard": "Custom Standard",
	} {
		if got := NormalizeStandard(in); got != want {
			t.Errorf("NormalizeStandard(%q) = %q, want %q", in, got, want)
		}
	}
}
