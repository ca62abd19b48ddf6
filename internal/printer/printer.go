// Package printer writes command output as a table, JSON or YAML, the three
// formats every `flotilla get` offers through -o/--output.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	Table = "table"
	JSON  = "json"
	YAML  = "yaml"
)

// AddFlag adds -o/--output (default table) to cmd, bound to format.
func AddFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", Table, "Output format: table, json or yaml")
}

// Validate reports an unknown format with the accepted ones.
func Validate(format string) error {
	switch format {
	case Table, JSON, YAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use table, json or yaml", format)
}

// Rows is a table: a header row and data rows of the same width.
type Rows struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (r *Rows) Add(cells ...string) { r.Rows = append(r.Rows, cells) }

// Print writes obj as JSON or YAML, or writes table() as an aligned table.
// table is called only for the table format.
func Print(w io.Writer, format string, obj any, table func() Rows) error {
	switch format {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(obj)
	case YAML:
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case Table, "":
		return WriteTable(w, table())
	}
	return Validate(format)
}

// WriteTable writes rows aligned in columns separated by three spaces, as kubectl does.
func WriteTable(w io.Writer, rows Rows) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(rows.Header, "\t"))
	for _, r := range rows.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
