package compliance

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v (a *Report, or a *ClusterView for --by cluster) as
// indented JSON. The schema is the json tags of Report (see docs/compliance.md),
// versioned by SchemaVersion.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
