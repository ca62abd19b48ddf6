// Command nistgen derives policy/compliance/nist/catalog.json, the NIST SP
// 800-53 rev5 control IDs, titles, families and baseline selections Flotilla
// ships, from a git clone of NIST's public OSCAL content
// (github.com/usnistgov/oscal-content, public domain).
//
//	go run ./hack/nistgen -repo /path/to/oscal-content[.git] [-rev HEAD] -out policy/compliance/nist/catalog.json
//
// It reads with git (no work tree needed), at -rev:
//   - the LOW, MODERATE, HIGH and PRIVACY baseline profiles (their imports'
//     include-controls with-ids are the baselines);
//   - the full rev5 catalog for IDs, titles and families. When the clone lacks
//     that file's blob at -rev (partial clones and mirrors leave out the
//     largest files), it takes the titles from the resolved baseline catalogs
//     at -rev, then, for the controls in no baseline, from the newest commit
//     whose full catalog is present. Every source used is recorded in the
//     output with its commit and catalog version.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

const dir = "nist.gov/SP800-53/rev5/json/"

var baselines = []string{"LOW", "MODERATE", "HIGH", "PRIVACY"}

func main() {
	repo := flag.String("repo", "", "git directory (or work tree) of a clone of github.com/usnistgov/oscal-content")
	rev := flag.String("rev", "HEAD", "revision to read")
	out := flag.String("out", "catalog.json", "file to write")
	flag.Parse()
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "nistgen: -repo is required (a clone of github.com/usnistgov/oscal-content)")
		os.Exit(2)
	}
	data, err := generate(*repo, *rev)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nistgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "nistgen:", err)
		os.Exit(1)
	}
}

// The output schema: see policy/compliance/nist (data.go) for the reader.
type output struct {
	Source   source    `json:"source"`
	Families []family  `json:"families"`
	Controls []control `json:"controls"`
}

type source struct {
	Repository string         `json:"repository"`
	Commit     string         `json:"commit"`
	Describe   string         `json:"describe"`
	Date       string         `json:"date"`
	Baselines  []sourceFile   `json:"baselines"`
	Catalogs   []sourceFile   `json:"catalogs"`
	License    string         `json:"license"`
	Counts     map[string]int `json:"counts"`
}

type sourceFile struct {
	Path    string `json:"path"`
	Commit  string `json:"commit"`
	Title   string `json:"title"`
	Version string `json:"version"`
	// Controls is how many controls took their title from this file.
	Controls int `json:"controls,omitempty"`
}

type family struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type control struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Baselines []string `json:"baselines,omitempty"`
	Withdrawn bool     `json:"withdrawn,omitempty"`
	sortID    string
}

// OSCAL shapes, only the fields read here.
type oscalProfile struct {
	Profile struct {
		Metadata oscalMetadata `json:"metadata"`
		Imports  []struct {
			Include []struct {
				WithIDs []string `json:"with-ids"`
			} `json:"include-controls"`
		} `json:"imports"`
	} `json:"profile"`
}

type oscalCatalog struct {
	Catalog struct {
		Metadata oscalMetadata `json:"metadata"`
		Groups   []struct {
			ID       string         `json:"id"`
			Title    string         `json:"title"`
			Controls []oscalControl `json:"controls"`
		} `json:"groups"`
	} `json:"catalog"`
}

type oscalMetadata struct {
	Title   string `json:"title"`
	Version string `json:"version"`
}

type oscalControl struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Props []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"props"`
	Controls []oscalControl `json:"controls"`
}

func generate(repo, rev string) ([]byte, error) {
	g := gitDir(repo)
	commit, err := g.run("rev-parse", rev+"^{commit}")
	if err != nil {
		return nil, err
	}
	describe, _ := g.run("describe", "--tags", commit)
	date, _ := g.run("show", "-s", "--format=%cI", commit)
	o := output{Source: source{
		Repository: "github.com/usnistgov/oscal-content", Commit: commit, Describe: describe, Date: date,
		License: "public domain (NIST; see the repository's LICENSE.md)", Counts: map[string]int{},
	}}

	members := map[string][]string{}
	for _, b := range baselines {
		path, data, err := g.firstPresent(commit, dir+"NIST_SP-800-53_rev5_"+b+"-baseline_profile.json", dir+"NIST_SP-800-53_rev5_"+b+"-baseline_profile-min.json")
		if err != nil {
			return nil, err
		}
		var p oscalProfile
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n := 0
		for _, imp := range p.Profile.Imports {
			for _, inc := range imp.Include {
				for _, id := range inc.WithIDs {
					cid, err := controlID(id)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", path, err)
					}
					members[cid] = append(members[cid], strings.ToLower(b))
					n++
				}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s selects no control", path)
		}
		o.Source.Counts[strings.ToLower(b)] = n
		o.Source.Baselines = append(o.Source.Baselines, sourceFile{Path: path, Commit: commit, Title: p.Profile.Metadata.Title, Version: p.Profile.Metadata.Version})
	}

	catalogs, err := g.catalogSources(commit)
	if err != nil {
		return nil, err
	}
	families := map[string]string{}
	controls := map[string]*control{}
	for _, src := range catalogs {
		var c oscalCatalog
		if err := json.Unmarshal(src.data, &c); err != nil {
			return nil, fmt.Errorf("%s at %s: %w", src.path, src.commit, err)
		}
		f := sourceFile{Path: src.path, Commit: src.commit, Title: c.Catalog.Metadata.Title, Version: c.Catalog.Metadata.Version}
		var walk func(fam string, list []oscalControl) error
		walk = func(fam string, list []oscalControl) error {
			for _, oc := range list {
				id, err := controlID(oc.ID)
				if err != nil {
					return fmt.Errorf("%s: %w", src.path, err)
				}
				if controls[id] == nil {
					ctl := &control{ID: id, Title: strings.Join(strings.Fields(oc.Title), " "), sortID: oc.ID}
					for _, p := range oc.Props {
						switch {
						case p.Name == "status" && p.Value == "withdrawn":
							ctl.Withdrawn = true
						case p.Name == "sort-id":
							ctl.sortID = p.Value
						}
					}
					controls[id] = ctl
					f.Controls++
				}
				if err := walk(fam, oc.Controls); err != nil {
					return err
				}
			}
			return nil
		}
		for _, grp := range c.Catalog.Groups {
			fam := strings.ToUpper(grp.ID)
			if families[fam] == "" {
				families[fam] = grp.Title
			}
			if err := walk(fam, grp.Controls); err != nil {
				return nil, err
			}
		}
		o.Source.Catalogs = append(o.Source.Catalogs, f)
	}

	for id, bs := range members {
		c := controls[id]
		if c == nil {
			return nil, fmt.Errorf("baseline control %s is in no catalog read", id)
		}
		c.Baselines = bs
	}
	for id, title := range families {
		o.Families = append(o.Families, family{ID: id, Title: title})
	}
	sort.Slice(o.Families, func(i, j int) bool { return o.Families[i].ID < o.Families[j].ID })
	for _, c := range controls {
		o.Controls = append(o.Controls, *c)
	}
	sort.Slice(o.Controls, func(i, j int) bool { return sortKey(o.Controls[i]) < sortKey(o.Controls[j]) })
	o.Source.Counts["controls"] = len(o.Controls)
	return encode(o)
}

// encode writes one family and one control per line, so the checked-in file
// reads and diffs well.
func encode(o output) ([]byte, error) {
	var b bytes.Buffer
	src, err := json.MarshalIndent(o.Source, "  ", "  ")
	if err != nil {
		return nil, err
	}
	b.WriteString("{\n  \"source\": ")
	b.Write(src)
	for _, part := range []struct {
		name string
		n    int
		item func(int) any
	}{
		{"families", len(o.Families), func(i int) any { return o.Families[i] }},
		{"controls", len(o.Controls), func(i int) any { return o.Controls[i] }},
	} {
		fmt.Fprintf(&b, ",\n  %q: [\n", part.name)
		for i := 0; i < part.n; i++ {
			line, err := json.Marshal(part.item(i))
			if err != nil {
				return nil, err
			}
			b.WriteString("    ")
			b.Write(line)
			if i < part.n-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  ]")
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// controlID turns an OSCAL id ("ac-6", "ac-6.1") into the ID people write
// ("AC-6", "AC-6(1)").
func controlID(oscal string) (string, error) {
	fam, rest, ok := strings.Cut(oscal, "-")
	base, enh, hasEnh := strings.Cut(rest, ".")
	if !ok || len(fam) != 2 || !digits(base) || (hasEnh && !digits(enh)) {
		return "", fmt.Errorf("%q is not a SP 800-53 control id", oscal)
	}
	id := strings.ToUpper(fam) + "-" + strings.TrimLeft(base, "0")
	if hasEnh {
		id += "(" + strings.TrimLeft(enh, "0") + ")"
	}
	return id, nil
}

func digits(s string) bool {
	_, err := strconv.Atoi(s)
	return s != "" && err == nil
}

// sortKey orders controls as the catalog does: family, number, enhancement.
func sortKey(c control) string {
	fam, rest, _ := strings.Cut(c.ID, "-")
	base, enh, _ := strings.Cut(strings.TrimSuffix(rest, ")"), "(")
	n, _ := strconv.Atoi(base)
	e, _ := strconv.Atoi(enh)
	return fmt.Sprintf("%s-%03d.%03d", fam, n, e)
}

type gitDir string

func (g gitDir) run(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", g.gitPath()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func (g gitDir) gitPath() string {
	if st, err := os.Stat(string(g) + "/.git"); err == nil && st.IsDir() {
		return string(g) + "/.git"
	}
	return string(g)
}

// present reports whether path's blob at commit is in the clone.
func (g gitDir) present(commit, path string) bool {
	_, err := g.run("cat-file", "-e", commit+":"+path)
	return err == nil
}

func (g gitDir) show(commit, path string) ([]byte, error) {
	cmd := exec.Command("git", "--git-dir", g.gitPath(), "cat-file", "blob", commit+":"+path)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %v", path, commit, err)
	}
	return out, nil
}

func (g gitDir) firstPresent(commit string, paths ...string) (string, []byte, error) {
	for _, p := range paths {
		if g.present(commit, p) {
			data, err := g.show(commit, p)
			return p, data, err
		}
	}
	return "", nil, fmt.Errorf("none of %s is present at %s", strings.Join(paths, ", "), commit)
}

type catalogSource struct {
	path, commit string
	data         []byte
}

// catalogSources lists where titles come from, in order of preference: the
// full catalog at commit; else the resolved baseline catalogs at commit and
// the newest full catalog present in the history.
func (g gitDir) catalogSources(commit string) ([]catalogSource, error) {
	full := []string{dir + "NIST_SP-800-53_rev5_catalog.json", dir + "NIST_SP-800-53_rev5_catalog-min.json"}
	if p, data, err := g.firstPresent(commit, full...); err == nil {
		return []catalogSource{{p, commit, data}}, nil
	}
	var out []catalogSource
	for _, b := range []string{"HIGH", "MODERATE", "LOW", "PRIVACY"} {
		p, data, err := g.firstPresent(commit,
			dir+"NIST_SP-800-53_rev5_"+b+"-baseline-resolved-profile_catalog.json",
			dir+"NIST_SP-800-53_rev5_"+b+"-baseline-resolved-profile_catalog-min.json")
		if err != nil {
			return nil, err
		}
		out = append(out, catalogSource{p, commit, data})
	}
	for _, p := range full {
		log, err := g.run("log", "--format=%H", commit, "--", p)
		if err != nil {
			return nil, err
		}
		for _, c := range strings.Fields(log) {
			if g.present(c, p) {
				data, err := g.show(c, p)
				if err != nil {
					return nil, err
				}
				return append(out, catalogSource{p, c, data}), nil
			}
		}
	}
	return nil, fmt.Errorf("no version of %s is present in %s", full[0], g)
}
