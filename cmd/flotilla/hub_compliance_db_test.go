package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/hub"
)

// TestComplianceDB: --compliance-db wins, then $FLOTILLA_COMPLIANCE_DB (the
// hub Pods' Secret URL), then compliance.db in the data dir.
func TestComplianceDB(t *testing.T) {
	dir := t.TempDir()
	const url = "postgres://hub:pw@pg:5432/history"
	for name, tc := range map[string]struct {
		flag, env string
		want      string
	}{
		"default":            {want: filepath.Join(dir, "compliance.db")},
		"from the env":       {env: url, want: url},
		"env with a newline": {env: url + "\n", want: url},
		"the flag wins":      {flag: "/var/lib/h.db", env: url, want: "/var/lib/h.db"},
		"off":                {flag: "off", env: url, want: ""},
		"off from the env":   {env: "off", want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := hub.Options{ComplianceDB: tc.flag}
			require.NoError(t, complianceDB(&o, dir, func(k string) string {
				if k == "FLOTILLA_COMPLIANCE_DB" {
					return tc.env
				}
				return ""
			}))
			assert.Equal(t, tc.want, o.ComplianceDB)
		})
	}
}

// TestSearchDB: --search-db wins, then $FLOTILLA_SEARCH_DB, then the
// compliance history's PostgreSQL database, then search.db in the data dir.
func TestSearchDB(t *testing.T) {
	dir := t.TempDir()
	const pg = "postgres://hub:pw@pg:5432/hub"
	for name, tc := range map[string]struct {
		flag, env, compliance string
		want                  string
	}{
		"default":                        {compliance: filepath.Join(dir, "compliance.db"), want: filepath.Join(dir, "search.db")},
		"from the env":                   {env: pg + "?search", want: pg + "?search"},
		"the compliance history's PG":    {compliance: pg, want: pg},
		"the flag wins":                  {flag: "/var/lib/s.db", env: pg, compliance: pg, want: "/var/lib/s.db"},
		"off":                            {flag: "off", compliance: pg, want: ""},
		"a SQLite history is not shared": {compliance: "/var/lib/h.db", want: filepath.Join(dir, "search.db")},
	} {
		t.Run(name, func(t *testing.T) {
			o := hub.Options{SearchDB: tc.flag, ComplianceDB: tc.compliance}
			require.NoError(t, searchDB(&o, dir, func(k string) string {
				if k == "FLOTILLA_SEARCH_DB" {
					return tc.env
				}
				return ""
			}))
			assert.Equal(t, tc.want, o.SearchDB)
		})
	}
}
