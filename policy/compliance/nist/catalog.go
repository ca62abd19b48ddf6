package nist

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

//go:generate sh -c "go run ../../../hack/nistgen -repo ${OSCAL_CONTENT:?set OSCAL_CONTENT to a clone of github.com/usnistgov/oscal-content} -out catalog.json"

//go:embed catalog.json
var catalogJSON []byte

// Standard is the name the compliance report gives NIST SP 800-53.
const Standard = "NIST SP 800-53"

// Control is one control or control enhancement of the catalog.
type Control struct {
	// ID as people write it: "AC-6", "AC-6(1)".
	ID    string `json:"id"`
	Title string `json:"title"`
	// Baselines that select it: "low", "moderate", "high", "privacy".
	Baselines []string `json:"baselines,omitempty"`
	// Withdrawn controls keep their ID and title (e.g. "AC-2(10)").
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// Family is the family ID ("AC") of the control.
func (c Control) Family() string {
	fam, _, _ := strings.Cut(c.ID, "-")
	return fam
}

// Family is a control family, e.g. {"CM", "Configuration Management"}.
type Family struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Source records where the data came from (see catalog.json).
type Source struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	Describe   string `json:"describe"`
	Date       string `json:"date"`
	Baselines  []File `json:"baselines"`
	Catalogs   []File `json:"catalogs"`
}

// File is one file of the OSCAL content the data was derived from.
type File struct {
	Path     string `json:"path"`
	Commit   string `json:"commit"`
	Title    string `json:"title"`
	Version  string `json:"version"`
	Controls int    `json:"controls,omitempty"`
}

// Catalog is the NIST SP 800-53 rev5 catalog as Flotilla ships it: control
// IDs, titles, families and baseline selections.
type Catalog struct {
	Source   Source    `json:"source"`
	Families []Family  `json:"families"`
	Controls []Control `json:"controls"`

	byID     map[string]int
	families map[string]Family
}

var load = sync.OnceValue(func() *Catalog {
	c, err := parseCatalog(catalogJSON)
	if err != nil {
		panic("nist: embedded catalog.json: " + err.Error())
	}
	return c
})

// Default returns the embedded catalog.
func Default() *Catalog { return load() }

func parseCatalog(data []byte) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	c.byID = make(map[string]int, len(c.Controls))
	for i, ctl := range c.Controls {
		c.byID[ctl.ID] = i
	}
	c.families = make(map[string]Family, len(c.Families))
	for _, f := range c.Families {
		c.families[f.ID] = f
	}
	return &c, nil
}

// Version names the data: "5.1.1+u4 (github.com/usnistgov/oscal-content v1.3.0-2-g88bb8de)".
func (c *Catalog) Version() string {
	v := ""
	if len(c.Source.Baselines) > 0 {
		v = c.Source.Baselines[0].Version + " "
	}
	return v + "(" + c.Source.Repository + " " + c.Source.Describe + ")"
}

// Control returns the control with id, written as the report writes IDs
// ("AC-6(1)"); OSCAL ids ("ac-6.1") are accepted too.
func (c *Catalog) Control(id string) (Control, bool) {
	i, ok := c.byID[id]
	if !ok {
		if canon, err := ParseID(id); err == nil {
			i, ok = c.byID[canon]
		}
	}
	if !ok {
		return Control{}, false
	}
	return c.Controls[i], true
}

// Family returns the family with id ("AC").
func (c *Catalog) Family(id string) (Family, bool) {
	f, ok := c.families[strings.ToUpper(id)]
	return f, ok
}

var oscalID = regexp.MustCompile(`^([A-Za-z]{2})-0*(\d+)(?:\.0*(\d+)|\(0*(\d+)\))?$`)

// ParseID reads a control ID in OSCAL form ("ac-6.1", "ac-02") or as people
// write it ("AC-6(1)") and returns it as people write it.
func ParseID(s string) (string, error) {
	m := oscalID.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", fmt.Errorf("%q is not a control id (like ac-6, ac-6.1 or AC-6(1))", s)
	}
	id := strings.ToUpper(m[1]) + "-" + m[2]
	if enh := m[3] + m[4]; enh != "" {
		id += "(" + enh + ")"
	}
	return id, nil
}

// OSCALID returns the OSCAL control id of a control ID: "AC-6(1)" is
// "ac-6.1". IDs of other standards are lower-cased with the same rule
// ("PR.DS-1" is "pr.ds-1").
func OSCALID(id string) string {
	s := strings.ToLower(id)
	if i := strings.Index(s, "("); i > 0 && strings.HasSuffix(s, ")") {
		s = s[:i] + "." + s[i+1:len(s)-1]
	}
	return s
}
