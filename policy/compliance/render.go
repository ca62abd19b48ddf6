package compliance

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Output formats.
const (
	FormatTable = "table"
	FormatCSV   = "csv"
	FormatJSON  = "json"
	FormatHTML  = "html"
	// FormatOSCAL is NIST OSCAL assessment-results JSON.
	FormatOSCAL = "oscal"
)

// Formats lists the output formats Render accepts.
var Formats = []string{FormatTable, FormatCSV, FormatJSON, FormatHTML, FormatOSCAL}

// Pivots for the table and JSON outputs.
const (
	ByControl = "control"
	ByCluster = "cluster"
)

// RenderOptions change how a report is written.
type RenderOptions struct {
	// By is ByControl (the default) or ByCluster; it pivots the table and JSON.
	By string
}

// Validate reports an unknown format or pivot.
func (o RenderOptions) Validate(format string) error {
	known := false
	for _, f := range Formats {
		known = known || f == format
	}
	if !known {
		return fmt.Errorf("unknown output format %q: use %s", format, strings.Join(Formats, ", "))
	}
	if o.By != "" && o.By != ByControl && o.By != ByCluster {
		return fmt.Errorf("--by %q: use control or cluster", o.By)
	}
	return nil
}

// Render writes r in format to w.
func Render(w io.Writer, format string, r *Report, o RenderOptions) error {
	if err := o.Validate(format); err != nil {
		return err
	}
	switch format {
	case FormatCSV:
		return WriteCSV(w, r)
	case FormatJSON:
		if o.By == ByCluster {
			return WriteJSON(w, r.ByCluster())
		}
		return WriteJSON(w, r)
	case FormatHTML:
		return WriteHTML(w, r)
	case FormatOSCAL:
		return WriteOSCAL(w, r)
	}
	if o.By == ByCluster {
		return WriteClusterTable(w, r)
	}
	return WriteTable(w, r)
}

// ClusterSummary is one cluster's row of the --by cluster pivot: how many
// controls it meets, violates or waits on, and which it violates.
type ClusterSummary struct {
	Cluster string `json:"cluster"`
	Counts  Counts `json:"counts"`
	// NonCompliant lists "<standard> <control>" of the violated controls.
	NonCompliant []string `json:"noncompliant"`
}

// ClusterView is the JSON document of the --by cluster pivot.
type ClusterView struct {
	SchemaVersion string           `json:"schemaVersion"`
	Clusters      []ClusterSummary `json:"clusters"`
	Baseline      *Coverage        `json:"baseline,omitempty"`
}

// ByCluster pivots the report: one summary per cluster, sorted by name.
func (r *Report) ByCluster() *ClusterView {
	idx := map[string]*ClusterSummary{}
	for _, c := range r.Clusters {
		idx[c] = &ClusterSummary{Cluster: c, NonCompliant: []string{}}
	}
	r.eachControl(func(s *Standard, _ *Family, c *Control) {
		for _, cell := range c.Clusters {
			cs := idx[cell.Cluster]
			if cs == nil {
				continue
			}
			cs.Counts.add(cell.State)
			if cell.State == NonCompliant {
				cs.NonCompliant = append(cs.NonCompliant, controlName(s, c))
			}
		}
	})
	v := &ClusterView{SchemaVersion: SchemaVersion, Clusters: []ClusterSummary{}, Baseline: r.Baseline}
	for _, c := range r.Clusters {
		v.Clusters = append(v.Clusters, *idx[c])
	}
	sort.Slice(v.Clusters, func(i, j int) bool { return v.Clusters[i].Cluster < v.Clusters[j].Cluster })
	return v
}

func (r *Report) eachControl(fn func(*Standard, *Family, *Control)) {
	for i := range r.Standards {
		s := &r.Standards[i]
		for j := range s.Families {
			f := &s.Families[j]
			for k := range f.Controls {
				fn(s, f, &f.Controls[k])
			}
		}
	}
}

// ViolatingClusters lists the clusters where c is NonCompliant.
func (c *Control) ViolatingClusters() []string {
	var out []string
	for _, cell := range c.Clusters {
		if cell.State == NonCompliant {
			out = append(out, cell.Cluster)
		}
	}
	return out
}

// controlName is "<standard> <control>", or for unmapped policies
// "unmapped (<policies>)" so the reader knows which policies to classify.
func controlName(s *Standard, c *Control) string {
	if s.Name == Unmapped {
		return Unmapped + " (" + strings.Join(c.Policies, ", ") + ")"
	}
	return s.Name + " " + c.Label()
}
