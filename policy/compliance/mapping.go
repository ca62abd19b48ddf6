package compliance

import (
	"sort"
	"time"

	"flotilla.dev/flotilla/policy/compliance/nist"
)

// mapping places a policy under one (standard, family, control).
type mapping struct {
	standard string
	family   Item
	control  Item
}

// noControl is the control under which a policy with categories but no
// controls is reported.
var noControl = Item{Title: "(no control)"}

// mappings expands a classification into the (standard, family, control)
// triples a policy is reported under. Every standard gets every control; a
// control goes to the category whose ID prefixes it ("AC" for "AC-6"), else to
// the only category, else to a family named after its prefix. A policy with no
// annotations lands under "unmapped".
func mappings(c Classification) []mapping {
	standards := c.Standards
	if len(standards) == 0 {
		standards = []string{Unmapped}
	}
	type pair struct{ family, control Item }
	var pairs []pair
	for _, ctl := range c.Controls {
		pairs = append(pairs, pair{familyFor(ctl, c.Categories), ctl})
	}
	// Categories no control landed in still count (with no control).
	for _, cat := range c.Categories {
		used := false
		for _, p := range pairs {
			if p.family.Key() == cat.Key() {
				used = true
			}
		}
		if !used {
			pairs = append(pairs, pair{cat, noControl})
		}
	}
	if len(pairs) == 0 {
		pairs = []pair{{Item{Title: Unmapped}, Item{Title: Unmapped}}}
	}
	var out []mapping
	for _, s := range standards {
		for _, p := range pairs {
			out = append(out, mapping{s, p.family, p.control})
		}
	}
	return out
}

func familyFor(ctl Item, categories []Item) Item {
	prefix := FamilyOf(ctl)
	for _, cat := range categories {
		if prefix != "" && cat.ID == prefix {
			return cat
		}
	}
	if len(categories) == 1 && (prefix == "" || categories[0].ID == "") {
		return categories[0]
	}
	if prefix != "" {
		return Item{ID: prefix}
	}
	return Item{Title: Unmapped}
}

// official gives NIST SP 800-53 families and controls the catalog's titles,
// whatever title (or none) the annotation wrote: "AC-6(1)" becomes "AC-6(1)
// Authorize Access to Security Functions", "CM-2 Baseline Configration" is
// spelled right. IDs the catalog does not know keep the annotation's title.
func official(m mapping) mapping {
	if m.standard != nist.Standard {
		return m
	}
	cat := nist.Default()
	if m.control.ID != "" {
		if c, ok := cat.Control(m.control.ID); ok {
			m.control.Title = c.Title
		}
	}
	if m.family.ID != "" {
		if f, ok := cat.Family(m.family.ID); ok {
			m.family.Title = f.Title
		}
	}
	return m
}

// builder accumulates cells per (standard, family, control) and cluster.
type builder struct {
	clusters  map[string]bool
	standards map[string]*stdAcc
}

type stdAcc struct {
	name     string
	families map[string]*famAcc
}

type famAcc struct {
	item     Item
	controls map[string]*ctlAcc
}

type ctlAcc struct {
	item     Item
	policies map[string]bool
	cells    map[string]*Cell
}

func newBuilder() *builder {
	return &builder{clusters: map[string]bool{}, standards: map[string]*stdAcc{}}
}

func (b *builder) add(m mapping, policy string, cells []Cell) {
	sk := lowerKey(m.standard)
	s := b.standards[sk]
	if s == nil {
		s = &stdAcc{name: m.standard, families: map[string]*famAcc{}}
		b.standards[sk] = s
	}
	f := s.families[m.family.Key()]
	if f == nil {
		f = &famAcc{item: m.family, controls: map[string]*ctlAcc{}}
		s.families[m.family.Key()] = f
	}
	f.item = richer(f.item, m.family)
	c := f.controls[m.control.Key()]
	if c == nil {
		c = &ctlAcc{item: m.control, policies: map[string]bool{}, cells: map[string]*Cell{}}
		f.controls[m.control.Key()] = c
	}
	c.item = richer(c.item, m.control)
	c.policies[policy] = true
	for _, cell := range cells {
		b.clusters[cell.Cluster] = true
		have := c.cells[cell.Cluster]
		if have == nil {
			cp := Cell{Cluster: cell.Cluster, State: cell.State}
			have = &cp
			c.cells[cell.Cluster] = have
		} else {
			have.State = worse(have.State, cell.State)
		}
		have.Violations = append(have.Violations, cell.Violations...)
	}
}

// richer keeps the first title seen, filling it in when a later policy spells
// the same ID with a title ("CM-2" then "CM-2 Baseline Configuration").
func richer(have, seen Item) Item {
	if have.Title == "" {
		have.Title = seen.Title
	}
	return have
}

func (b *builder) report(now time.Time) *Report {
	r := &Report{SchemaVersion: SchemaVersion, GeneratedAt: now.UTC(), Clusters: sortedKeys(b.clusters), Standards: []Standard{}}
	for _, s := range b.standards {
		std := Standard{Name: s.name, Families: []Family{}}
		for _, f := range s.families {
			fam := Family{Item: f.item, Controls: []Control{}}
			for _, c := range f.controls {
				ctl := Control{Item: c.item, Policies: sortedKeys(c.policies), Clusters: []Cell{}}
				for _, cl := range sortedKeys(boolKeys(c.cells)) {
					cell := *c.cells[cl]
					sortViolations(cell.Violations)
					ctl.Clusters = append(ctl.Clusters, cell)
					ctl.Counts.add(cell.State)
				}
				fam.Counts.Compliant += ctl.Counts.Compliant
				fam.Counts.NonCompliant += ctl.Counts.NonCompliant
				fam.Counts.Pending += ctl.Counts.Pending
				fam.Controls = append(fam.Controls, ctl)
			}
			sort.Slice(fam.Controls, func(i, j int) bool { return lessItem(fam.Controls[i].Item, fam.Controls[j].Item) })
			std.Families = append(std.Families, fam)
		}
		sort.Slice(std.Families, func(i, j int) bool { return lessItem(std.Families[i].Item, std.Families[j].Item) })
		r.Standards = append(r.Standards, std)
	}
	// Named standards first, alphabetically; "unmapped" last.
	sort.Slice(r.Standards, func(i, j int) bool {
		a, b := r.Standards[i].Name, r.Standards[j].Name
		if (a == Unmapped) != (b == Unmapped) {
			return b == Unmapped
		}
		return lowerKey(a) < lowerKey(b)
	})
	return r
}

func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		if vs[i].Policy != vs[j].Policy {
			return vs[i].Policy < vs[j].Policy
		}
		return vs[i].Template < vs[j].Template
	})
}
