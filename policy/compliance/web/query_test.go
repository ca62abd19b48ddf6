package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/compliance/web"
)

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	window := 30 * 24 * time.Hour
	many := strings.TrimSuffix(strings.Repeat("c,", web.MaxClusters+1), ",")
	for _, tc := range []struct {
		name, raw string
		standard  string
		control   string
		clusters  []string
		since     time.Time
		refused   string
	}{
		{name: "none: the default window", raw: "", since: now.Add(-window)},
		{name: "all four", raw: "standard=NIST+SP+800-53&control=AC-6&clusters=east,west-1&since=3d",
			standard: "NIST SP 800-53", control: "AC-6", clusters: []string{"east", "west-1"}, since: now.Add(-72 * time.Hour)},
		{name: "a date", raw: "since=2026-11-01", since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{name: "an unknown parameter", raw: "cluster=east", refused: `query parameter "cluster" is not known: the parameters are standard, control, clusters, since`},
		{name: "a repeated parameter", raw: "control=AC&control=SC", refused: "query parameter control is given 2 times"},
		{name: "a long standard", raw: "standard=" + strings.Repeat("x", web.MaxTextParam+1), refused: "query parameter standard: 129 bytes, longer than 128"},
		{name: "a control character", raw: "control=AC%0A6", refused: "query parameter control: contains a control character"},
		{name: "not UTF-8", raw: "control=%ff", refused: "query parameter control: not UTF-8"},
		{name: "an empty cluster", raw: "clusters=east,,west", refused: "query parameter clusters: item 2 is empty"},
		{name: "a trailing comma", raw: "clusters=east,", refused: "query parameter clusters: item 2 is empty"},
		{name: "not a cluster name", raw: "clusters=east,West_1", refused: `query parameter clusters: item 2 "West_1" is not a cluster name`},
		{name: "too many clusters", raw: "clusters=" + many, refused: "query parameter clusters: 1001 clusters, more than 1000"},
		{name: "an unreadable since", raw: "since=yesterday-ish", refused: `query parameter since "yesterday-ish": not a duration`},
		{name: "an empty since", raw: "since=", refused: "query parameter since: empty"},
		{name: "a since after now", raw: "since=2030-01-01", refused: `query parameter since "2030-01-01": 2030-01-01T00:00:00Z is after now`},
		{name: "a since beyond what a time holds", raw: "since=99999999d", refused: `query parameter since "99999999d": more than 106751d back`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.raw)
			require.NoError(t, err)
			standard, control, clusters, since, err := web.ParseQuery(q, now, window)
			if tc.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refused)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.standard, standard)
			assert.Equal(t, tc.control, control)
			assert.Equal(t, tc.clusters, clusters)
			assert.True(t, tc.since.Equal(since), "since %s, want %s", since, tc.since)
		})
	}
}
