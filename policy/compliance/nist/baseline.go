package nist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"flotilla.dev/flotilla/internal/fileinput"
)

// Baseline is a selection of controls to report coverage against: one of
// NIST's (low, moderate, high, privacy) or a user's OSCAL profile.
type Baseline struct {
	// Name is "NIST SP 800-53 rev5 MODERATE" or the profile's title.
	Name string `json:"name"`
	// Source is "built-in" or the profile file's path.
	Source string `json:"source"`
	// Controls are the selected IDs ("AC-6(1)"), in catalog order.
	Controls []string `json:"-"`
}

// Names of the built-in baselines, as --baseline takes them.
var Names = []string{"low", "moderate", "high", "privacy"}

// ProfileLimit bounds a profile file.
const ProfileLimit = fileinput.ManifestLimit

// LoadBaseline returns the built-in baseline name (low, moderate, high or
// privacy; any case), or else reads the OSCAL profile (JSON) at that path.
func (c *Catalog) LoadBaseline(nameOrFile string) (*Baseline, error) {
	if b, ok := c.Baseline(nameOrFile); ok {
		return b, nil
	}
	data, err := fileinput.ReadFile(nameOrFile, ProfileLimit, "OSCAL profile files")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("baseline %q is not one of %s, and no such profile file exists", nameOrFile, strings.Join(Names, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("baseline profile: %w", err)
	}
	return c.ParseProfile(data, nameOrFile)
}

// Baseline returns a built-in baseline: low, moderate, high or privacy.
func (c *Catalog) Baseline(name string) (*Baseline, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	known := false
	for _, n := range Names {
		known = known || n == name
	}
	if !known {
		return nil, false
	}
	b := &Baseline{Name: "NIST SP 800-53 rev5 " + strings.ToUpper(name), Source: "built-in"}
	for _, ctl := range c.Controls {
		for _, in := range ctl.Baselines {
			if in == name {
				b.Controls = append(b.Controls, ctl.ID)
			}
		}
	}
	return b, true
}

// profile is the part of an OSCAL profile (JSON) read here.
type profile struct {
	Profile *struct {
		Metadata struct {
			Title string `json:"title"`
		} `json:"metadata"`
		Imports []struct {
			Href    string      `json:"href"`
			All     *struct{}   `json:"include-all"`
			Include []selection `json:"include-controls"`
			Exclude []selection `json:"exclude-controls"`
		} `json:"imports"`
	} `json:"profile"`
}

type selection struct {
	WithIDs  []string        `json:"with-ids"`
	Matching json.RawMessage `json:"matching"`
	Children string          `json:"with-child-controls"`
}

// ParseProfile reads an OSCAL profile (JSON) selecting controls of this
// catalog: its imports' include-all, include-controls (with-ids, and
// with-child-controls "yes") and exclude-controls (with-ids). name names the
// file in errors, which say what is wrong and where ("profile.imports[0].
// include-controls[0].with-ids[3]: ...").
func (c *Catalog) ParseProfile(data []byte, name string) (*Baseline, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("OSCAL profile %s: %s", name, fmt.Sprintf(format, args...))
	}
	var p profile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			line, col := position(data, syn.Offset)
			return nil, fail("not valid JSON at line %d, column %d: %v", line, col, err)
		case errors.As(err, &typ):
			line, col := position(data, typ.Offset)
			return nil, fail("%s at line %d, column %d is a JSON %s, want %s", typ.Field, line, col, typ.Value, typ.Type)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fail("not valid JSON: the file ends before the JSON value does")
		}
		return nil, fail("not valid JSON: %v", err)
	}
	if p.Profile == nil {
		var top map[string]json.RawMessage
		_ = json.Unmarshal(data, &top)
		var keys []string
		for k := range top {
			keys = append(keys, k)
		}
		return nil, fail("no top-level \"profile\" object (found %s): only OSCAL profiles in JSON are read", quoteAll(keys))
	}
	if len(p.Profile.Imports) == 0 {
		return nil, fail("profile.imports is empty: a profile selects controls by importing a catalog")
	}
	selected := map[string]bool{}
	for i, imp := range p.Profile.Imports {
		at := fmt.Sprintf("profile.imports[%d]", i)
		if strings.TrimSpace(imp.Href) == "" {
			return nil, fail("%s has no href", at)
		}
		if imp.All == nil && len(imp.Include) == 0 {
			return nil, fail("%s has neither include-all nor include-controls", at)
		}
		if imp.All != nil {
			for _, ctl := range c.Controls {
				if !ctl.Withdrawn {
					selected[ctl.ID] = true
				}
			}
		}
		for j, sel := range imp.Include {
			ids, err := c.selectIDs(sel, fmt.Sprintf("%s.include-controls[%d]", at, j))
			if err != nil {
				return nil, fail("%v", err)
			}
			for _, id := range ids {
				selected[id] = true
			}
		}
		for j, sel := range imp.Exclude {
			ids, err := c.selectIDs(sel, fmt.Sprintf("%s.exclude-controls[%d]", at, j))
			if err != nil {
				return nil, fail("%v", err)
			}
			for _, id := range ids {
				delete(selected, id)
			}
		}
	}
	if len(selected) == 0 {
		return nil, fail("selects no control")
	}
	b := &Baseline{Name: strings.TrimSpace(p.Profile.Metadata.Title), Source: name}
	if b.Name == "" {
		b.Name = filepath.Base(name)
	}
	for _, ctl := range c.Controls {
		if selected[ctl.ID] {
			b.Controls = append(b.Controls, ctl.ID)
		}
	}
	return b, nil
}

func (c *Catalog) selectIDs(sel selection, at string) ([]string, error) {
	if len(sel.Matching) > 0 && string(sel.Matching) != "null" {
		return nil, fmt.Errorf("%s.matching is not supported: list the controls in with-ids", at)
	}
	if len(sel.WithIDs) == 0 {
		return nil, fmt.Errorf("%s has no with-ids", at)
	}
	children := false
	switch sel.Children {
	case "", "no":
	case "yes":
		children = true
	default:
		return nil, fmt.Errorf("%s.with-child-controls is %q, want yes or no", at, sel.Children)
	}
	var out []string
	for k, raw := range sel.WithIDs {
		id, err := ParseID(raw)
		if err != nil {
			return nil, fmt.Errorf("%s.with-ids[%d]: %v", at, k, err)
		}
		if _, ok := c.Control(id); !ok {
			return nil, fmt.Errorf("%s.with-ids[%d]: %q is not a control of NIST SP 800-53 rev5 (catalog %s)", at, k, raw, c.Version())
		}
		out = append(out, id)
		if children {
			for _, ctl := range c.Controls {
				if strings.HasPrefix(ctl.ID, id+"(") {
					out = append(out, ctl.ID)
				}
			}
		}
	}
	return out, nil
}

// position turns the offset encoding/json reports (the bytes read up to and
// including the offending one) into the 1-based line and column of that byte.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset-1, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func quoteAll(keys []string) string {
	if len(keys) == 0 {
		return "no object"
	}
	sort.Strings(keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", keys[i])
	}
	return strings.Join(keys, ", ")
}
