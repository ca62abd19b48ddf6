package nist

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ac-6", "AC-6"},
		{"ac-6.1", "AC-6(1)"},
		{"ac-02.01", "AC-2(1)"},
		{"AC-6(1)", "AC-6(1)"},
		{" sc-28 ", "SC-28"},
	} {
		got, err := ParseID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "ac", "ac-", "pr.ds-1", "ac-6.x", "ac-6(1"} {
		if got, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) = %q, want an error", bad, got)
		}
	}
}

func TestOSCALID(t *testing.T) {
	for in, want := range map[string]string{"AC-6": "ac-6", "AC-6(1)": "ac-6.1", "SC-28": "sc-28", "PR.DS-1": "pr.ds-1"} {
		if got := OSCALID(in); got != want {
			t.Errorf("OSCALID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCatalog checks the embedded data against facts of SP 800-53 rev5 and
// SP 800-53B.
func TestCatalog(t *testing.T) {
	c := Default()
	if !strings.HasPrefix(c.Source.Commit, "88bb8de") || c.Version() == "" {
		t.Errorf("source = %+v", c.Source)
	}
	if len(c.Families) != 20 || len(c.Controls) < 1189 {
		t.Errorf("%d families, %d controls; want 20 and at least 1189", len(c.Families), len(c.Controls))
	}
	for _, tc := range []struct {
		id, title string
		baselines []string
		withdrawn bool
	}{
		{"AC-6", "Least Privilege", []string{"moderate", "high"}, false},
		{"AC-6(1)", "Authorize Access to Security Functions", []string{"moderate", "high"}, false},
		{"CM-2", "Baseline Configuration", []string{"low", "moderate", "high"}, false},
		{"SC-28", "Protection of Information at Rest", []string{"moderate", "high"}, false},
		{"SC-6", "Resource Availability", nil, false},
		{"AC-2(10)", "Shared and Group Account Credential Change", nil, true},
		{"PT-2", "Authority to Process Personally Identifiable Information", []string{"privacy"}, false},
	} {
		got, ok := c.Control(tc.id)
		if !ok || got.Title != tc.title || !slices.Equal(got.Baselines, tc.baselines) || got.Withdrawn != tc.withdrawn {
			t.Errorf("Control(%s) = %+v, %v; want %q %v withdrawn=%v", tc.id, got, ok, tc.title, tc.baselines, tc.withdrawn)
		}
	}
	if f, ok := c.Family("cm"); !ok || f.Title != "Configuration Management" {
		t.Errorf("Family(cm) = %+v, %v", f, ok)
	}
	if _, ok := c.Control("AC-99"); ok {
		t.Error("AC-99 is in the catalog")
	}
	// Sizes of the SP 800-53B baselines (controls plus enhancements).
	for name, want := range map[string]int{"low": 149, "moderate": 287, "high": 370, "privacy": 96, "MODERATE": 287} {
		b, ok := c.Baseline(name)
		if !ok || len(b.Controls) != want {
			t.Errorf("Baseline(%s): %v controls, want %d", name, b, want)
		}
	}
	if _, ok := c.Baseline("medium"); ok {
		t.Error("Baseline(medium) exists")
	}
}

func TestParseProfile(t *testing.T) {
	b, err := Default().LoadBaseline(filepath.Join("testdata", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ctl := range Default().Controls {
		if strings.HasPrefix(ctl.ID, "SI-4") && ctl.ID != "SI-4(1)" {
			want = append(want, ctl.ID)
		}
	}
	want = append([]string{"AC-6", "AC-6(1)", "CM-2", "SC-28"}, want...)
	if b.Name != "Kubernetes platform baseline" || !slices.Equal(b.Controls, want) {
		t.Errorf("got %q %v, want %v", b.Name, b.Controls, want)
	}
}

// TestParseProfileRefuses: a bad profile gets an error naming the file and
// what is wrong where.
func TestParseProfileRefuses(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"truncated", `{"profile": {`, "the file ends before the JSON value does"},
		{"syntax on line 3", "{\n\"profile\": {\n\"imports\": [,]}}", "not valid JSON at line 3, column 13"},
		{"catalog", `{"catalog": {"uuid": "x"}}`, `no top-level "profile" object (found "catalog")`},
		{"no imports", `{"profile": {"metadata": {"title": "t"}}}`, "profile.imports is empty"},
		{"no href", `{"profile": {"imports": [{"include-all": {}}]}}`, "profile.imports[0] has no href"},
		{"nothing included", `{"profile": {"imports": [{"href": "#x"}]}}`, "profile.imports[0] has neither include-all nor include-controls"},
		{"unknown id", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": ["ac-6", "ac-99"]}]}]}}`,
			`profile.imports[0].include-controls[0].with-ids[1]: "ac-99" is not a control of NIST SP 800-53 rev5`},
		{"not an id", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": ["least privilege"]}]}]}}`,
			`profile.imports[0].include-controls[0].with-ids[0]: "least privilege" is not a control id`},
		{"ids not strings", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": [6]}]}]}}`,
			"profile.imports.include-controls.with-ids at line 1, column 76 is a JSON number, want string"},
		{"matching", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"matching": [{"pattern": "ac-*"}]}]}]}}`,
			"profile.imports[0].include-controls[0].matching is not supported"},
		{"children", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": ["ac-6"], "with-child-controls": "maybe"}]}]}}`,
			`with-child-controls is "maybe", want yes or no`},
		{"all excluded", `{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": ["ac-6"]}], "exclude-controls": [{"with-ids": ["ac-6"]}]}]}}`,
			"selects no control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Default().ParseProfile([]byte(tc.data), "p.json")
			if err == nil {
				t.Fatalf("accepted: %+v", b)
			}
			if !strings.Contains(err.Error(), "OSCAL profile p.json: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadBaselineRefuses(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, ProfileLimit+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"medium", `baseline "medium" is not one of low, moderate, high, privacy, and no such profile file exists`},
		{dir, "is a directory"},
		{big, "is larger than 8 MiB"},
	} {
		if _, err := Default().LoadBaseline(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadBaseline(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
