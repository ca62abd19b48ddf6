package compliance

import (
	"flotilla.dev/flotilla/policy/compliance/nist"
)

// Coverage answers "how much of a baseline do the policies cover, and is it
// met?", per family of NIST SP 800-53.
type Coverage struct {
	// Baseline is "NIST SP 800-53 rev5 MODERATE" or the profile's title.
	Baseline string `json:"baseline"`
	// Source is "built-in" or the profile file.
	Source string `json:"source"`
	// Catalog names the catalog data: version and oscal-content commit.
	Catalog string `json:"catalog"`
	CoverageCounts
	Families []FamilyCoverage `json:"families"`
}

// CoverageCounts are numbers of baseline controls.
type CoverageCounts struct {
	// InBaseline controls are selected by the baseline (after --control).
	InBaseline int `json:"inBaseline"`
	// Covered controls have at least one policy mapped to them.
	Covered int `json:"covered"`
	// Met controls are covered and Compliant on every cluster of the report.
	Met int `json:"met"`
}

// FamilyCoverage is one family's coverage: counts, the controls no policy
// covers, and every baseline control of the family with its status.
type FamilyCoverage struct {
	Item
	CoverageCounts
	Uncovered []Item            `json:"uncovered"`
	Controls  []BaselineControl `json:"controls"`
}

// BaselineControl is a baseline control and its status: met, not-met or uncovered.
type BaselineControl struct {
	Item
	Status string `json:"status"`
}

// WithStatus lists the IDs of the family's controls with status.
func (f *FamilyCoverage) WithStatus(status string) []string {
	var out []string
	for _, c := range f.Controls {
		if c.Status == status {
			out = append(out, c.ID)
		}
	}
	return out
}

// Status of a baseline control, as the CSV writes it.
const (
	BaselineMet       = "met"
	BaselineNotMet    = "not-met"
	BaselineUncovered = "uncovered"
)

// Cover computes r's coverage of baseline b: for each control b selects (and
// f.Control keeps), whether a policy under the standard NIST SP 800-53 is
// mapped to it (covered), and whether it is Compliant on every cluster of the
// report (met; a cluster where no mapped policy is placed is not met).
// An enhancement is its own control: a policy on AC-6 does not cover AC-6(1).
func Cover(r *Report, b *nist.Baseline, f Filter) *Coverage {
	cat := nist.Default()
	status := r.baselineStatus()
	cov := &Coverage{Baseline: b.Name, Source: b.Source, Catalog: "NIST SP 800-53 rev5 " + cat.Version(), Families: []FamilyCoverage{}}
	index := map[string]int{}
	for _, id := range b.Controls {
		ctl, _ := cat.Control(id)
		item := Item{ID: id, Title: ctl.Title}
		fam := FamilyOf(item)
		if !controlMatches(f.Control, Item{ID: fam}, item) {
			continue
		}
		i, ok := index[fam]
		if !ok {
			ff, _ := cat.Family(fam)
			cov.Families = append(cov.Families, FamilyCoverage{Item: Item{ID: fam, Title: ff.Title}, Uncovered: []Item{}, Controls: []BaselineControl{}})
			i = len(cov.Families) - 1
			index[fam] = i
		}
		fc := &cov.Families[i]
		fc.InBaseline++
		st := status(id)
		switch st {
		case BaselineMet:
			fc.Covered++
			fc.Met++
		case BaselineNotMet:
			fc.Covered++
		default:
			fc.Uncovered = append(fc.Uncovered, item)
		}
		fc.Controls = append(fc.Controls, BaselineControl{Item: item, Status: st})
	}
	for _, fc := range cov.Families {
		cov.InBaseline += fc.InBaseline
		cov.Covered += fc.Covered
		cov.Met += fc.Met
	}
	return cov
}

// baselineStatus returns, for a NIST SP 800-53 control ID, whether the report
// meets it, covers it without meeting it, or does not cover it.
func (r *Report) baselineStatus() func(id string) string {
	type acc struct {
		cells map[string]State
	}
	controls := map[string]*acc{}
	for i := range r.Standards {
		s := &r.Standards[i]
		if s.Name != nist.Standard {
			continue
		}
		for _, f := range s.Families {
			for _, c := range f.Controls {
				if c.ID == "" {
					continue
				}
				a := controls[c.ID]
				if a == nil {
					a = &acc{cells: map[string]State{}}
					controls[c.ID] = a
				}
				for _, cell := range c.Clusters {
					if have, ok := a.cells[cell.Cluster]; ok {
						a.cells[cell.Cluster] = worse(have, cell.State)
					} else {
						a.cells[cell.Cluster] = cell.State
					}
				}
			}
		}
	}
	return func(id string) string {
		a := controls[id]
		if a == nil {
			return BaselineUncovered
		}
		if len(r.Clusters) == 0 {
			return BaselineNotMet
		}
		for _, cl := range r.Clusters {
			if a.cells[cl] != Compliant {
				return BaselineNotMet
			}
		}
		return BaselineMet
	}
}
