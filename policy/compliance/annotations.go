package compliance

import (
	"regexp"
	"strings"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Unmapped is the standard, family and control name given to policies that
// carry no (or empty) classification annotations: they are reported, never dropped.
const Unmapped = "unmapped"

// Item is one classification entry: an ID (e.g. "CM", "AC-6(1)", "PR.DS-1")
// and an optional title. Items with no recognisable ID keep ID empty.
type Item struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
}

// Key is the grouping key: the ID, or the lower-cased title when there is no ID.
func (i Item) Key() string {
	if i.ID != "" {
		return i.ID
	}
	return strings.ToLower(i.Title)
}

// Label is "ID Title", "ID" or "Title".
func (i Item) Label() string {
	switch {
	case i.ID == "":
		return i.Title
	case i.Title == "":
		return i.ID
	}
	return i.ID + " " + i.Title
}

// Classification is what a policy's annotations say about it.
type Classification struct {
	Standards  []string
	Categories []Item
	Controls   []Item
}

// Mapped reports whether any classification annotation has a value.
func (c Classification) Mapped() bool {
	return len(c.Standards)+len(c.Categories)+len(c.Controls) > 0
}

// Classify parses a policy's standards, categories and controls annotations.
func Classify(annotations map[string]string) Classification {
	var c Classification
	seen := map[string]bool{}
	for _, s := range splitList(annotations[policyv1.StandardsAnnotation]) {
		s = NormalizeStandard(s)
		if !seen[s] {
			seen[s] = true
			c.Standards = append(c.Standards, s)
		}
	}
	c.Categories = parseItems(annotations[policyv1.CategoriesAnnotation], ParseFamily)
	c.Controls = parseItems(annotations[policyv1.ControlsAnnotation], ParseControl)
	return c
}

func parseItems(value string, parse func(string) Item) []Item {
	var out []Item
	seen := map[string]bool{}
	for _, s := range splitList(value) {
		it := parse(s)
		if !seen[it.Key()] {
			seen[it.Key()] = true
			out = append(out, it)
		}
	}
	return out
}

// splitList splits a comma-separated annotation, trimming blanks and dropping
// empty entries. Whitespace inside an entry is collapsed to single spaces.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.Join(strings.Fields(s), " ")
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// standardAliases maps a standard's squeezed, upper-cased spelling (letters and
// digits only) to its canonical name.
var standardAliases = map[string]string{
	"NIST":                          "NIST SP 800-53",
	"NIST80053":                     "NIST SP 800-53",
	"NISTSP80053":                   "NIST SP 800-53",
	"NIST80053R5":                   "NIST SP 800-53",
	"NISTSP80053R5":                 "NIST SP 800-53",
	"NIST80053REV5":                 "NIST SP 800-53",
	"NISTSP80053REV5":               "NIST SP 800-53",
	"NISTCSF":                       "NIST-CSF",
	"NISTCYBERSECURITYFRAMEWORK":    "NIST-CSF",
	"NISTCYBERSECURITYFRAMEWORKCSF": "NIST-CSF",
	"PCI":                           "PCI-DSS",
	"PCIDSS":                        "PCI-DSS",
	"FISMA":                         "FISMA",
	"HIPAA":                         "HIPAA",
}

// NormalizeStandard returns the canonical name of a standard: known spellings of
// NIST SP 800-53 and NIST-CSF are folded together; any other standard keeps its
// spelling with whitespace collapsed.
func NormalizeStandard(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if canon, ok := standardAliases[squeeze(s)]; ok {
		return canon
	}
	return s
}

func squeeze(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	// controlID: "AC-6", "ac-6 (1)", "AC-6(1)", "SC-28", "PR.DS-1", "SI-4.2"
	// (an old enhancement spelling), followed by an optional title.
	controlID = regexp.MustCompile(`^([A-Za-z]{2}(?:\.[A-Za-z]{2})?)\s*-\s*(\d+)(?:\s*\(\s*(\d+)\s*\)|\.(\d+))?(?:[\s:–-]+(.*))?$`)
	// familyID: "CM", "PR.DS", followed by an optional title; the ID is one
	// word of two letters (or NIST-CSF's "PR.DS").
	familyID = regexp.MustCompile(`^([A-Za-z]{2}(?:\.[A-Za-z]{2})?)(?:[\s:–-]+(.*))?$`)
)

// ParseControl parses one controls entry such as "CM-2 Baseline Configuration",
// "AC-6(1)", "ac-6 (1) Least Privilege" or "PR.PT-3 Least Functionality".
// An entry without a recognisable ID is kept as a title.
func ParseControl(s string) Item {
	s = strings.Join(strings.Fields(s), " ")
	m := controlID.FindStringSubmatch(s)
	if m == nil {
		return Item{Title: s}
	}
	id := strings.ToUpper(m[1]) + "-" + strings.TrimLeft(m[2], "0")
	if strings.TrimLeft(m[2], "0") == "" {
		id = strings.ToUpper(m[1]) + "-0"
	}
	if enh := m[3] + m[4]; enh != "" {
		id += "(" + enh + ")"
	}
	return Item{ID: id, Title: strings.TrimSpace(m[5])}
}

// ParseFamily parses one categories entry such as "CM Configuration
// Management", "PR.DS Data Security" or "cm". An entry without a leading ID
// ("Configuration Management") is kept as a title.
func ParseFamily(s string) Item {
	s = strings.Join(strings.Fields(s), " ")
	m := familyID.FindStringSubmatch(s)
	if m == nil {
		return Item{Title: s}
	}
	return Item{ID: strings.ToUpper(m[1]), Title: strings.TrimSpace(m[2])}
}

// FamilyOf returns the family ID a control ID belongs to ("AC" for "AC-6(1)",
// "PR.DS" for "PR.DS-1"), or "" for a control without an ID.
func FamilyOf(control Item) string {
	if i := strings.Index(control.ID, "-"); i > 0 {
		return control.ID[:i]
	}
	return ""
}
